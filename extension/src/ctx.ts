// Owns the extension's lifecycle: the daemon manager and client, live events, status bar,
// tree views, diagnostics and the active recording.
import * as vscode from 'vscode';
import type { CreatedRecording } from '../../daemon/protocol/api';
import type { Run, RunWorkers } from '../../daemon/protocol/entities';
import type { DaemonEvent } from '../../daemon/protocol/events';
import { describeWorkers } from '../../webview/src/workers';
import type { DaemonClient, EventStream } from './client';
import { DaemonManager, daemonUrl, dataFolder } from './daemon';
import { CANDIDATE_SCHEME, CandidateFilesProvider, EvolutionTree } from './evolutionTree';
import { NodesTree } from './nodesTree';
import { ReadOnlyDocs } from './readOnlyDocs';
import { RecordingsTree } from './recordingsTree';
import { RunsTree } from './runsTree';
import type { StatusBar } from './status';
import { GoldPatches, TasksTree } from './tasksTree';

export class Ctx implements vscode.Disposable {
  readonly daemon: DaemonManager;
  readonly runsTree: RunsTree;
  readonly recordingsTree: RecordingsTree;
  readonly nodesTree: NodesTree;
  readonly tasksTree: TasksTree;
  readonly goldPatches = new GoldPatches();
  /** Attempts' output, shown read-only. */
  readonly outputs = new ReadOnlyDocs();
  readonly evolutionTree: EvolutionTree;
  /** Candidates' files for the diff editor and *Adopt Candidate*. */
  readonly candidateFiles: CandidateFilesProvider;
  readonly diagnostics = vscode.languages.createDiagnosticCollection('harness-rl');
  private readonly eventEmitter = new vscode.EventEmitter<DaemonEvent>();
  readonly onEvent = this.eventEmitter.event;
  private readonly reconnectEmitter = new vscode.EventEmitter<void>();
  /** The event socket is open again after a drop: what was shown from events may have missed some. */
  readonly onEventsReconnected = this.reconnectEmitter.event;
  private events: EventStream | undefined;
  private readonly disposables: vscode.Disposable[] = [];
  /** The recording this window started (its key lives only here and in the terminals' env). */
  recording: CreatedRecording | undefined;
  /** The running runs, the most recently updated last (for the status bar). */
  private readonly training = new Map<
    string,
    { name: string; step: number; steps?: number; workers?: RunWorkers }
  >();
  /** Runs that paused themselves, the most recent last, with why (the status bar shows the last). */
  private readonly paused = new Map<string, { name: string; step: number; message: string }>();

  constructor(
    readonly extension: vscode.ExtensionContext,
    readonly log: vscode.OutputChannel,
    readonly status: StatusBar,
  ) {
    this.daemon = new DaemonManager(extension.secrets, this.log);
    this.runsTree = new RunsTree(
      () => this.client,
      () => vscode.workspace.getConfiguration('harnessRl').get<number>('pageSize', 100),
    );
    this.recordingsTree = new RecordingsTree(() => this.client);
    this.nodesTree = new NodesTree(() => this.client);
    this.tasksTree = new TasksTree(extension.workspaceState);
    this.evolutionTree = new EvolutionTree(() => this.client);
    this.candidateFiles = new CandidateFilesProvider(() => this.client);
    this.disposables.push(
      this.log,
      this.daemon,
      this.status,
      this.runsTree,
      this.recordingsTree,
      this.nodesTree,
      this.diagnostics,
      this.eventEmitter,
      this.reconnectEmitter,
      vscode.window.createTreeView('harnessRl.runs', {
        treeDataProvider: this.runsTree,
        showCollapseAll: true,
      }),
      vscode.window.createTreeView('harnessRl.recordings', { treeDataProvider: this.recordingsTree }),
      vscode.window.createTreeView('harnessRl.nodes', { treeDataProvider: this.nodesTree }),
      vscode.window.createTreeView('harnessRl.tasks', { treeDataProvider: this.tasksTree }),
      vscode.workspace.registerTextDocumentContentProvider(GoldPatches.scheme, this.goldPatches),
      this.outputs,
      vscode.workspace.registerTextDocumentContentProvider(ReadOnlyDocs.scheme, this.outputs),
      this.evolutionTree,
      vscode.window.createTreeView('harnessRl.evolution', {
        treeDataProvider: this.evolutionTree,
        showCollapseAll: true,
      }),
      vscode.workspace.registerTextDocumentContentProvider(CANDIDATE_SCHEME, this.candidateFiles),
      this.daemon.onDidChangeState(() => this.onDaemonState()),
      this.onEvent((e) => this.onDaemonEvent(e)),
      this.onEvent((e) => this.evolutionTree.onEvent(e)),
      vscode.workspace.onDidChangeConfiguration((e) => {
        if (e.affectsConfiguration('harnessRl.pageSize')) this.runsTree.refresh();
      }),
    );
  }

  get extensionUri(): vscode.Uri {
    return this.extension.extensionUri;
  }

  get client(): DaemonClient | undefined {
    return this.daemon.client;
  }

  /**
   * The client, or undefined after ONE message with a "Start Daemon" button
   * (commands that need the daemon call this first).
   */
  async requireClient(): Promise<DaemonClient | undefined> {
    if (this.client) return this.client;
    if (this.daemon.state === 'starting') {
      return vscode.window.withProgress(
        { location: vscode.ProgressLocation.Notification, title: 'Harness RL: waiting for the daemon…' },
        () => this.daemon.start(),
      );
    }
    const connected = await this.daemon.connect();
    if (connected) return connected;
    if (this.daemon.state === 'found') {
      await this.offerToken();
      return this.client;
    }
    const pick = await vscode.window.showErrorMessage(
      `Harness RL: the daemon is not running (${daemonUrl()}).`,
      'Start Daemon',
    );
    if (pick !== 'Start Daemon') return undefined;
    return this.startDaemon();
  }

  /**
   * Start Daemon: connects when a daemon already answers at harnessRl.daemonUrl (and says so),
   * else starts one; a start that fails says why at once, with Open Settings for harnessRl.cliPath.
   */
  async startDaemon(): Promise<DaemonClient | undefined> {
    if (this.client) return this.client;
    const url = daemonUrl();
    const elsewhere = await this.daemon.probe();
    const client = await vscode.window.withProgress(
      {
        location: vscode.ProgressLocation.Notification,
        title: elsewhere
          ? `Harness RL: connecting to the daemon at ${url}…`
          : 'Harness RL: starting the daemon…',
      },
      () => (elsewhere ? this.daemon.connect() : this.daemon.start()),
    );
    if (client && elsewhere) {
      void vscode.window.showInformationMessage(
        `Harness RL: connected to the daemon already running at ${url}.`,
      );
    } else if (!client && elsewhere) {
      await this.offerToken();
    } else if (!client) {
      const pick = await vscode.window.showErrorMessage(
        `Harness RL: the daemon did not start: ${this.daemon.lastError ?? 'see the logs'}. Is harness-rl installed? Set its path in harnessRl.cliPath.`,
        'Open Settings',
        'Show Logs',
      );
      if (pick === 'Open Settings')
        void vscode.commands.executeCommand('workbench.action.openSettings', 'harnessRl.cliPath');
      if (pick === 'Show Logs') this.log.show();
    }
    return client;
  }

  /** A daemon answers but takes none of the known tokens: offer to enter its token. */
  private async offerToken(): Promise<void> {
    const pick = await vscode.window.showErrorMessage(
      `Harness RL: a daemon runs at ${daemonUrl()} but does not accept the known tokens (${dataFolder()}/token, or the one stored in VS Code).`,
      'Set Daemon Token…',
    );
    if (pick) await vscode.commands.executeCommand('harnessRl.setDaemonToken');
  }

  private onDaemonState() {
    const state = this.daemon.state;
    void vscode.commands.executeCommand('setContext', 'harnessRl.daemonRunning', state === 'running');
    this.events?.close();
    this.events = undefined;
    const client = this.client;
    if (client) {
      let dropped = false;
      this.events = client.events(
        (e) => this.eventEmitter.fire(e),
        (connected) => {
          if (!connected) void this.checkAlive();
          // events missed while the socket was down: reload what the views and the status bar show
          if (connected && dropped) {
            this.refreshViews();
            this.reloadTraining();
            this.reconnectEmitter.fire();
          }
          dropped = !connected;
        },
      );
    }
    this.refreshViews();
    this.reloadTraining();
  }

  /**
   * What trains is the daemon's to say: forget it when the daemon goes, and ask again when one is
   * (back) up (a restarted daemon resumes the run with new workers; the old "no worker" must not stay).
   */
  private reloadTraining() {
    this.training.clear();
    this.paused.clear();
    this.updateStatus();
    const client = this.client;
    if (client) void this.loadTraining(client);
  }

  /** The running runs and their workers, from the daemon. */
  private async loadTraining(client: DaemonClient): Promise<void> {
    try {
      const runs = await client.listRuns(undefined, 20, 'training');
      if (client !== this.client) return;
      for (const run of runs.items.filter((r) => r.status === 'running').reverse()) {
        if (this.training.has(run.id)) continue; // a run event came first: it is newer
        const steps = (run.config as { schedule?: { steps?: number } } | null)?.schedule?.steps;
        this.training.set(run.id, { name: run.name, step: run.step, steps });
        void this.fetchWorkers(run.id);
      }
      for (const run of runs.items.filter((r) => r.status === 'paused').reverse()) this.notePaused(run, true);
      this.updateStatus();
    } catch {
      // the tree shows errors
    }
  }

  refreshViews() {
    this.runsTree.refresh();
    this.recordingsTree.refresh();
    this.nodesTree.refresh();
    this.evolutionTree.refresh();
  }

  /** The event socket closed: the daemon may be gone (not one we own; those report their exit). */
  private async checkAlive() {
    const client = this.client;
    if (!client || this.daemon.owned) return;
    try {
      await client.health();
    } catch {
      this.daemon.markLost();
    }
  }

  private onDaemonEvent(e: DaemonEvent) {
    this.runsTree.onEvent(e);
    this.recordingsTree.onEvent(e);
    this.nodesTree.onEvent(e);
    // an evaluation's run scores a harness: the status bar follows the runs that train
    if (e.type === 'run' && e.run.kind === 'training') {
      const steps = (e.run.config as { schedule?: { steps?: number } } | null)?.schedule?.steps;
      const before = this.training.get(e.run.id);
      this.training.delete(e.run.id);
      if (e.run.status === 'running') {
        this.training.set(e.run.id, { name: e.run.name, step: e.run.step, steps, workers: before?.workers });
        if (!before) void this.fetchWorkers(e.run.id);
      }
      this.notePaused(e.run);
      this.updateStatus();
    }
    if (e.type === 'workers') {
      const entry = this.training.get(e.workers.run_id);
      if (entry) {
        entry.workers = e.workers;
        this.updateStatus();
      }
    }
    if (e.type === 'recording' && this.recording?.id === e.recording.id && e.recording.status === 'stopped') {
      this.clearRecording();
    }
  }

  setRecording(rec: CreatedRecording | undefined) {
    this.recording = rec;
    void vscode.commands.executeCommand('setContext', 'harnessRl.recording', rec !== undefined);
    this.updateStatus();
  }

  clearRecording() {
    this.extension.environmentVariableCollection.clear();
    this.setRecording(undefined);
  }

  updateStatus() {
    const url = daemonUrl();
    switch (this.daemon.state) {
      case 'stopped':
        this.status.set({ kind: 'stopped' });
        return;
      case 'starting':
        this.status.set({ kind: 'starting' });
        return;
      case 'failed':
        this.status.set({ kind: 'failed' });
        return;
      case 'found':
        this.status.set({ kind: 'found', url });
        return;
      case 'running':
        if (this.recording) this.status.set({ kind: 'recording', name: this.recording.name, url });
        else {
          const latest = [...this.training.values()].at(-1);
          const paused = [...this.paused].at(-1);
          if (paused)
            this.status.set({ kind: 'paused', runId: paused[0], run: paused[1].name, ...paused[1], url });
          else if (latest)
            this.status.set({
              kind: 'training',
              run: latest.name,
              runId: [...this.training.keys()].at(-1),
              step: latest.step,
              steps: latest.steps,
              url,
              others: this.training.size - 1,
              workers: describeWorkers(latest.workers),
            });
          else this.status.set({ kind: 'idle', url });
        }
    }
  }

  /** The run the status bar shows (the most recently updated of those training). */
  trainingRunId(): string | undefined {
    return [...this.training.keys()].at(-1);
  }

  /** The names of the runs training now (as the status bar counts them). */
  trainingRuns(): string[] {
    return [...this.training.values()].map((t) => t.name);
  }

  /** Called once after activation: connect quietly to a daemon that already runs. */
  async connectQuietly(): Promise<void> {
    // connecting changes the daemon's state: onDaemonState loads what trains
    await this.daemon.connect();
  }

  /** Keeps the paused runs; a run that pauses now says so once, with Resume and Dashboard at hand. */
  private notePaused(run: Run, quiet = false) {
    const was = this.paused.has(run.id);
    this.paused.delete(run.id);
    if (run.status !== 'paused') return;
    const message = run.error ?? 'paused';
    this.paused.set(run.id, { name: run.name, step: run.step, message });
    if (was || quiet) return;
    const arg = { kind: 'runId', id: run.id };
    void vscode.window
      .showWarningMessage(`Harness RL: run "${run.name}" paused: ${message}`, 'Open Dashboard', 'Resume Run')
      .then((pick) => {
        if (pick === 'Open Dashboard') void vscode.commands.executeCommand('harnessRl.openDashboard', arg);
        if (pick === 'Resume Run') void vscode.commands.executeCommand('harnessRl.resumeRun', arg);
      });
  }

  /** Who runs a running run's rollouts (later changes come as `workers` events). */
  private async fetchWorkers(runId: string) {
    try {
      const workers = await this.client?.runWorkers(runId);
      const entry = this.training.get(runId);
      if (workers && entry && !entry.workers) {
        entry.workers = workers;
        this.updateStatus();
      }
    } catch {
      // an older daemon without the route: no note
    }
  }

  push(...d: vscode.Disposable[]) {
    this.disposables.push(...d);
  }

  async stop(): Promise<void> {
    this.events?.close();
    if (this.daemon.owned) await this.daemon.stop();
  }

  dispose(): void {
    this.events?.close();
    for (const d of this.disposables.splice(0).reverse()) d.dispose();
  }
}
