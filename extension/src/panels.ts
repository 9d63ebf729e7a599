// The trajectory, dashboard and recording snippets webview panels: strict CSP, typed messages
// (webview/src/protocol.ts), state restored after a reload through registerWebviewPanelSerializer.
import { randomBytes } from 'node:crypto';
import * as vscode from 'vscode';
import type { z } from 'zod';
import {
  DashboardState,
  FromWebview,
  type ToDashboard,
  type ToSnippets,
  type ToTrajectory,
  TrajectoryState,
} from '../../webview/src/protocol';
import { errorText } from './client';
import type { Ctx } from './ctx';
import { evaluationRunName } from './labels';
import { samplesFor } from './samples';
import { recordingSnippets } from './snippets';
import { StepProgressTracker } from './stepProgress';
import { Throttle } from './throttle';

export const TRAJECTORY_VIEW = 'harnessRl.trajectory';
export const DASHBOARD_VIEW = 'harnessRl.dashboard';
export const SNIPPETS_VIEW = 'harnessRl.snippets';

export function webviewOptions(extensionUri: vscode.Uri): vscode.WebviewPanelOptions & vscode.WebviewOptions {
  return {
    enableScripts: true,
    retainContextWhenHidden: false,
    localResourceRoots: [
      vscode.Uri.joinPath(extensionUri, 'dist', 'webview'),
      vscode.Uri.joinPath(extensionUri, 'media'),
    ],
  };
}

/** The page around a bundle: only the bundle's nonce'd script and styles from the extension. */
export function webviewHtml(
  webview: vscode.Webview,
  extensionUri: vscode.Uri,
  bundle: 'trajectory' | 'dashboard' | 'snippets' | 'evaluation',
  title: string,
): string {
  const nonce = randomBytes(16).toString('base64');
  const base = vscode.Uri.joinPath(extensionUri, 'dist', 'webview');
  const script = webview.asWebviewUri(vscode.Uri.joinPath(base, `${bundle}.js`));
  const style = webview.asWebviewUri(vscode.Uri.joinPath(base, `${bundle}.css`));
  const csp = [
    "default-src 'none'",
    `style-src ${webview.cspSource}`,
    `img-src ${webview.cspSource} data:`,
    `font-src ${webview.cspSource}`,
    `script-src 'nonce-${nonce}'`,
  ].join('; ');
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link rel="stylesheet" href="${style}">
<title>${title.replace(/[<>&"]/g, '')}</title>
</head>
<body data-view="${bundle}">
<script nonce="${nonce}" src="${script}"></script>
</body>
</html>`;
}

export const DAEMON_STOPPED = 'The Harness RL daemon is not running.';

/** The panel already open for this target, revealed; otherwise a new webview panel handed to `make`. */
export function showPanel<P extends Panel>(
  ctx: Ctx,
  existing: P | undefined,
  viewType: string,
  title: string,
  make: (panel: vscode.WebviewPanel) => P,
): P {
  if (existing) {
    existing.panel.reveal();
    return existing;
  }
  const panel = vscode.window.createWebviewPanel(
    viewType,
    title,
    vscode.ViewColumn.Active,
    webviewOptions(ctx.extensionUri),
  );
  return make(panel);
}

/** Restores a panel after a reload from its webview state (checked by `schema`; a panel whose state
 * does not parse is closed, not shown blank). */
export function panelSerializer<S>(
  ctx: Ctx,
  schema: z.ZodType<S>,
  restore: (panel: vscode.WebviewPanel, state: S) => void,
): vscode.WebviewPanelSerializer {
  return {
    async deserializeWebviewPanel(panel, state) {
      const parsed = schema.safeParse(state);
      if (!parsed.success) {
        panel.dispose();
        return;
      }
      panel.webview.options = webviewOptions(ctx.extensionUri);
      restore(panel, parsed.data);
    },
  };
}

export abstract class Panel implements vscode.Disposable {
  protected readonly disposables: vscode.Disposable[] = [];
  private readonly reload = new Throttle(() => void this.load(), 300);
  protected ready = false;

  constructor(
    protected readonly ctx: Ctx,
    readonly panel: vscode.WebviewPanel,
  ) {
    this.disposables.push(
      panel.onDidDispose(() => this.dispose()),
      panel.webview.onDidReceiveMessage((m) => this.onRawMessage(m)),
      ctx.daemon.onDidChangeState(() => this.onDaemonState()),
    );
  }

  /** A daemon that is back (restarted, or started from the error page) may have more to show. */
  protected onDaemonState(): void {
    if (this.ctx.client) this.reloadSoon();
  }

  private async onRawMessage(raw: unknown) {
    const parsed = FromWebview.safeParse(raw);
    if (!parsed.success) {
      this.ctx.log.appendLine(`webview sent an unknown message: ${JSON.stringify(raw).slice(0, 200)}`);
      return;
    }
    const m = parsed.data;
    switch (m.type) {
      case 'ready':
        this.ready = true;
        await this.load();
        break;
      case 'refresh':
        await this.load();
        break;
      case 'startDaemon':
        // once it runs, onDaemonState reloads the page
        await vscode.commands.executeCommand('harnessRl.startDaemon');
        break;
      case 'copy':
        await vscode.env.clipboard.writeText(m.text);
        void vscode.window.showInformationMessage(`Copied ${m.what}.`);
        break;
      case 'stopRun':
        await vscode.commands.executeCommand('harnessRl.stopRun', { kind: 'runId', id: m.run_id });
        break;
      case 'resumeRun':
        await vscode.commands.executeCommand('harnessRl.resumeRun', { kind: 'runId', id: m.run_id });
        break;
      case 'stepValidation':
        await this.stepValidation(m.run_id, m.step);
        break;
      case 'openRollout':
        await TrajectoryPanel.show(this.ctx, m.rollout_id);
        break;
      case 'compareRuns':
        await this.compareRuns(m.run_ids);
        break;
      // through the commands: the evaluation panels live in evaluationPanel.ts, which imports this file
      case 'openEvaluation':
        await vscode.commands.executeCommand('harnessRl.openEvaluation', { evaluationId: m.evaluation_id });
        break;
      case 'compareEvaluations':
        await vscode.commands.executeCommand('harnessRl.compareEvaluations', { a: m.a, b: m.b });
        break;
    }
  }

  /** Only the dashboard overlays other runs and shows a step's scatter. */
  protected async compareRuns(_runIds: string[]): Promise<void> {}
  protected async stepValidation(_runId: string, _step: number): Promise<void> {}

  protected reloadSoon() {
    if (this.ready) this.reload.schedule();
  }

  abstract load(): Promise<void>;

  dispose(): void {
    this.reload.dispose();
    for (const d of this.disposables.splice(0)) d.dispose();
  }
}

export class TrajectoryPanel extends Panel {
  private static readonly open = new Map<string, TrajectoryPanel>();

  static async show(
    ctx: Ctx,
    rolloutId: string,
    focusCallId: string | null = null,
  ): Promise<TrajectoryPanel> {
    const existing = TrajectoryPanel.open.get(rolloutId);
    if (existing) existing.focusCallId = focusCallId;
    const shown = showPanel(
      ctx,
      existing,
      TRAJECTORY_VIEW,
      `Rollout ${rolloutId.slice(-8)}`,
      (panel) => new TrajectoryPanel(ctx, panel, rolloutId, focusCallId),
    );
    if (existing) await existing.load();
    return shown;
  }

  static serializer(ctx: Ctx): vscode.WebviewPanelSerializer {
    return panelSerializer(
      ctx,
      TrajectoryState,
      (panel, state) => new TrajectoryPanel(ctx, panel, state.rollout_id, state.focus_call_id ?? null),
    );
  }

  private constructor(
    ctx: Ctx,
    panel: vscode.WebviewPanel,
    readonly rolloutId: string,
    private focusCallId: string | null,
  ) {
    super(ctx, panel);
    TrajectoryPanel.open.set(rolloutId, this);
    panel.webview.html = webviewHtml(panel.webview, ctx.extensionUri, 'trajectory', panel.title);
    this.disposables.push(
      ctx.onEvent((e) => {
        const id =
          e.type === 'rollout'
            ? e.rollout.id
            : e.type === 'llm_call'
              ? e.call.rollout_id
              : e.type === 'reward'
                ? e.reward.rollout_id
                : null;
        if (id === this.rolloutId) this.reloadSoon();
      }),
    );
  }

  private post(m: ToTrajectory) {
    void this.panel.webview.postMessage(m);
  }

  async load(): Promise<void> {
    const client = this.ctx.client;
    if (!client) {
      this.post({ type: 'error', message: DAEMON_STOPPED, daemon_stopped: true });
      return;
    }
    try {
      const rollout = await client.getRollout(this.rolloutId);
      const { samples, token_texts, prefix_breaks } = await samplesFor(client, rollout, this.ctx.log);
      this.post({
        type: 'trajectory',
        rollout: rollout.prefix_breaks.length || !prefix_breaks ? rollout : { ...rollout, prefix_breaks },
        samples,
        token_texts,
        proxy_base_url: new URL('/v1', client.baseUrl).toString(),
        focus_call_id: this.focusCallId,
      });
    } catch (err) {
      this.post({ type: 'error', message: `Could not load rollout ${this.rolloutId}: ${errorText(err)}` });
    }
  }

  override dispose(): void {
    if (TrajectoryPanel.open.get(this.rolloutId) === this) TrajectoryPanel.open.delete(this.rolloutId);
    super.dispose();
  }
}

export class DashboardPanel extends Panel {
  private static readonly open = new Map<string, DashboardPanel>();
  /** Runs the webview overlays on its charts; their live metrics are forwarded too. */
  private compared: string[] = [];
  /** The current step's rollouts, live. */
  private readonly progress: StepProgressTracker;

  static show(ctx: Ctx, runId: string, runName = runId): DashboardPanel {
    return showPanel(
      ctx,
      DashboardPanel.open.get(runId),
      DASHBOARD_VIEW,
      `Run ${evaluationRunName(runName)}`,
      (panel) => new DashboardPanel(ctx, panel, runId),
    );
  }

  static serializer(ctx: Ctx): vscode.WebviewPanelSerializer {
    return panelSerializer(
      ctx,
      DashboardState,
      (panel, state) => new DashboardPanel(ctx, panel, state.run_id),
    );
  }

  private constructor(
    ctx: Ctx,
    panel: vscode.WebviewPanel,
    readonly runId: string,
  ) {
    super(ctx, panel);
    DashboardPanel.open.set(runId, this);
    this.progress = new StepProgressTracker(
      () => this.ctx.client,
      runId,
      (progress) => this.ready && this.post({ type: 'progress', progress }),
    );
    this.disposables.push(
      this.progress,
      ctx.onEvent((e) => this.progress.onEvent(e)),
    );
    panel.webview.html = webviewHtml(panel.webview, ctx.extensionUri, 'dashboard', panel.title);
    this.disposables.push(
      ctx.onEvent((e) => {
        if (!this.ready) return;
        if (
          e.type === 'run_metrics' &&
          (e.metrics.run_id === this.runId || this.compared.includes(e.metrics.run_id))
        )
          this.post({ type: 'metrics', metrics: e.metrics });
        if (e.type === 'run' && e.run.id === this.runId) this.post({ type: 'run', run: e.run });
        if (e.type === 'workers' && e.workers.run_id === this.runId)
          this.post({ type: 'workers', workers: e.workers });
      }),
    );
  }

  private post(m: ToDashboard) {
    void this.panel.webview.postMessage(m);
  }

  /** A daemon that stops leaves the charts up but marks the run as not training (nothing runs it). */
  protected override onDaemonState(): void {
    const state = this.ctx.daemon.state;
    if (this.ready && (state === 'stopped' || state === 'failed' || state === 'found'))
      this.post({ type: 'daemon', running: false });
    super.onDaemonState();
  }

  async load(): Promise<void> {
    const client = this.ctx.client;
    if (!client) {
      this.post({ type: 'error', message: DAEMON_STOPPED, daemon_stopped: true });
      return;
    }
    try {
      const [run, metrics] = await Promise.all([client.getRun(this.runId), client.runMetrics(this.runId)]);
      this.panel.title = `Run ${evaluationRunName(run.name)}`;
      this.post({ type: 'dashboard', run, metrics });
      void this.progress.load();
      // Who runs the rollouts (an older daemon has no such route: no note then).
      const workers = await client.runWorkers(this.runId).catch(() => null);
      if (workers) this.post({ type: 'workers', workers });
      const others = await client.listRuns(undefined, 100, 'training').catch(() => null);
      if (others)
        this.post({
          type: 'runs',
          runs: others.items
            .filter((r) => r.id !== this.runId)
            .map(({ id, name, status, created_at }) => ({ id, name, status, created_at })),
        });
      if (this.compared.length > 0) await this.compareRuns(this.compared);
    } catch (err) {
      this.post({ type: 'error', message: `Could not load run ${this.runId}: ${errorText(err)}` });
    }
  }

  protected override async compareRuns(runIds: string[]): Promise<void> {
    const client = this.ctx.client;
    if (!client) return;
    this.compared = runIds.filter((id) => id !== this.runId);
    const runs = await Promise.all(
      this.compared.map(async (id) => {
        try {
          const [run, metrics] = await Promise.all([client.getRun(id), client.runMetrics(id)]);
          return { run, metrics };
        } catch (err) {
          this.ctx.log.appendLine(`dashboard: could not load run ${id} to compare: ${errorText(err)}`);
          return null;
        }
      }),
    );
    this.post({ type: 'compare', runs: runs.filter((r) => r !== null) });
  }

  protected override async stepValidation(runId: string, step: number): Promise<void> {
    const client = this.ctx.client;
    if (!client) return;
    try {
      const validation = await client.stepValidation(runId, step);
      this.post({ type: 'validation', run_id: runId, step, validation });
    } catch (err) {
      this.post({ type: 'validation', run_id: runId, step, validation: null, message: errorText(err) });
    }
  }

  override dispose(): void {
    if (DashboardPanel.open.get(this.runId) === this) DashboardPanel.open.delete(this.runId);
    super.dispose();
  }
}

/** The active recording's snippets, read-only with Copy buttons (not an Untitled file holding the key). */
export class SnippetsPanel extends Panel {
  private static current: SnippetsPanel | undefined;

  static show(ctx: Ctx): SnippetsPanel {
    const existing = SnippetsPanel.current;
    const shown = showPanel(
      ctx,
      existing,
      SNIPPETS_VIEW,
      'Recording Snippets',
      (panel) => new SnippetsPanel(ctx, panel),
    );
    if (existing) void existing.load();
    return shown;
  }

  private constructor(ctx: Ctx, panel: vscode.WebviewPanel) {
    super(ctx, panel);
    SnippetsPanel.current = this;
    panel.webview.html = webviewHtml(panel.webview, ctx.extensionUri, 'snippets', panel.title);
    // a recording that stops or starts in this window changes what there is to show
    this.disposables.push(ctx.onEvent((e) => e.type === 'recording' && this.reloadSoon()));
  }

  async load(): Promise<void> {
    if (!this.ready) return;
    const rec = this.ctx.recording;
    const post = (m: ToSnippets) => void this.panel.webview.postMessage(m);
    if (!rec) {
      post({
        type: 'error',
        message: 'No recording is active in this window. Start one from the Recordings view.',
      });
      return;
    }
    const upstream = rec.upstream as { kind?: string } | null;
    const model = upstream?.kind === 'reference' ? 'reference' : 'your-model';
    post({ type: 'snippets', recording: rec.name, markdown: recordingSnippets(rec, model), key: rec.key });
  }

  override dispose(): void {
    if (SnippetsPanel.current === this) SnippetsPanel.current = undefined;
    super.dispose();
  }
}
