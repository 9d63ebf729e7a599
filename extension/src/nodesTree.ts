// Nodes → their GPUs: the node agents the daemon connects to for runs (GET /api/nodes), kept live
// from the 'node' events without refetching; then, per running run whose workers are on Ray or
// attached, its workers by Ray node (kept live from the 'workers' events) and their recent attempts
// (kept live from the 'rollout' events, workerAttempts.ts).
// Rows are rendered by nodeLabels.ts and workerLabels.ts.
import * as vscode from 'vscode';
import type { Attempt, NodeInfo, Run, RunWorkers } from '../../daemon/protocol/entities';
import type { DaemonEvent } from '../../daemon/protocol/events';
import type { DaemonClient } from './client';
import { errorRow, type MessageNode, messageItem } from './messageRow';
import { compareNodes, type GpuRow, nodeChanged, nodeRow } from './nodeLabels';
import { Throttle } from './throttle';
import { WorkerAttempts } from './workerAttempts';
import {
  type AttemptRow,
  attemptRow,
  type PlaceRow,
  runWorkersRow,
  showsWorkers,
  type WorkerRow,
} from './workerLabels';

export type NodesNode =
  | { kind: 'node'; node: NodeInfo }
  | { kind: 'gpu'; gpu: GpuRow }
  | { kind: 'runWorkers'; run: Pick<Run, 'id' | 'name'>; workers: RunWorkers }
  | { kind: 'place'; runId: string; place: PlaceRow }
  | { kind: 'worker'; runId: string; worker: WorkerRow }
  | { kind: 'workerAttempt'; attempt: Attempt; row: AttemptRow }
  | MessageNode;

/** How many of a run's newest rollouts are read for its workers' recent attempts. */
const ROLLOUTS_READ = 40;

export class NodesTree implements vscode.TreeDataProvider<NodesNode>, vscode.Disposable {
  private readonly emitter = new vscode.EventEmitter<NodesNode | undefined>();
  readonly onDidChangeTreeData = this.emitter.event;
  private readonly redraw = new Throttle(() => this.emitter.fire(undefined), 300);
  /** By node id; undefined until the first GET /api/nodes (and after refresh). */
  private nodes: Map<string, NodeInfo> | undefined;
  /** Running runs whose workers are shown, by run id; undefined until first listed (and after refresh). */
  private runWorkers: Map<string, { run: Pick<Run, 'id' | 'name'>; workers: RunWorkers }> | undefined;
  /** A run's workers' recent attempts, read when a worker row is first opened, then kept live. */
  private readonly attempts: WorkerAttempts;

  constructor(private readonly getClient: () => DaemonClient | undefined) {
    this.attempts = new WorkerAttempts(
      {
        recent: (runId) => recentAttempts(this.requireClient(), runId),
        rollout: async (id) => (await this.requireClient().getRollout(id)).attempts,
      },
      () => this.redraw.schedule(),
    );
  }

  private requireClient(): DaemonClient {
    const client = this.getClient();
    if (!client) throw new Error('no daemon connected');
    return client;
  }

  refresh(): void {
    this.nodes = undefined;
    this.runWorkers = undefined;
    this.attempts.clear();
    this.emitter.fire(undefined);
  }

  async getChildren(node?: NodesNode): Promise<NodesNode[]> {
    const client = this.getClient();
    if (!client) return [];
    if (node) return this.childrenOf(node);
    try {
      if (!this.nodes) {
        const listed = await client.listNodes();
        this.nodes = new Map(listed.map((n) => [n.id, n]));
      }
      if (!this.runWorkers) this.runWorkers = await listRunWorkers(client);
    } catch (err) {
      return [errorRow(err)];
    }
    // none: the view's welcome text says how to add nodes
    const nodes = [...this.nodes.values()]
      .sort(compareNodes)
      .map((n) => ({ kind: 'node' as const, node: n }));
    const runs = [...this.runWorkers.values()]
      .filter((r) => showsWorkers(r.workers))
      .map((r) => ({ kind: 'runWorkers' as const, ...r }));
    return [...nodes, ...runs];
  }

  private async childrenOf(node: NodesNode): Promise<NodesNode[]> {
    switch (node.kind) {
      case 'node':
        return nodeRow(node.node).gpus.map((gpu) => ({ kind: 'gpu' as const, gpu }));
      case 'runWorkers':
        return runWorkersRow(node.run, node.workers).places.map((place) => ({
          kind: 'place' as const,
          runId: node.run.id,
          place,
        }));
      case 'place':
        return node.place.workers.map((worker) => ({ kind: 'worker' as const, runId: node.runId, worker }));
      case 'worker': {
        try {
          const mine = await this.attempts.of(node.runId, node.worker.name);
          if (mine.length === 0) return [{ kind: 'message', text: 'no recent attempt' }];
          return mine.map((a) => ({ kind: 'workerAttempt' as const, attempt: a, row: attemptRow(a) }));
        } catch (err) {
          return [errorRow(err)];
        }
      }
      default:
        return [];
    }
  }

  getTreeItem(node: NodesNode): vscode.TreeItem {
    const C = vscode.TreeItemCollapsibleState;
    switch (node.kind) {
      case 'node': {
        const row = nodeRow(node.node);
        const item = new vscode.TreeItem(row.label, row.gpus.length ? C.Collapsed : C.None);
        item.id = node.node.id;
        item.description = row.description;
        item.iconPath = new vscode.ThemeIcon(row.icon, new vscode.ThemeColor(row.color));
        const tooltip = new vscode.MarkdownString(row.tooltip);
        tooltip.supportThemeIcons = true;
        item.tooltip = tooltip;
        item.contextValue = row.contextValue;
        return item;
      }
      case 'gpu': {
        const item = new vscode.TreeItem(node.gpu.label, C.None);
        item.id = node.gpu.id;
        item.description = node.gpu.description;
        item.tooltip = node.gpu.tooltip;
        item.iconPath = new vscode.ThemeIcon('circuit-board');
        return item;
      }
      case 'runWorkers': {
        const row = runWorkersRow(node.run, node.workers);
        const item = new vscode.TreeItem(row.label, row.places.length ? C.Collapsed : C.None);
        item.id = row.id;
        item.description = row.description;
        item.tooltip = new vscode.MarkdownString(row.tooltip);
        item.iconPath = new vscode.ThemeIcon(row.icon);
        item.contextValue = `workers.${node.workers.mode}`;
        return item;
      }
      case 'place': {
        const item = new vscode.TreeItem(node.place.label, C.Collapsed);
        item.id = node.place.id;
        item.description = node.place.description;
        item.tooltip = node.place.tooltip;
        item.iconPath = new vscode.ThemeIcon('vm');
        return item;
      }
      case 'worker': {
        const item = new vscode.TreeItem(node.worker.label, C.Collapsed);
        item.id = node.worker.id;
        item.description = node.worker.description;
        item.tooltip = node.worker.tooltip;
        item.iconPath = new vscode.ThemeIcon('person');
        item.contextValue = 'worker';
        return item;
      }
      case 'workerAttempt': {
        const item = new vscode.TreeItem(node.row.label, C.None);
        item.id = node.row.id;
        item.description = node.row.description;
        item.tooltip = node.row.tooltip;
        item.iconPath = new vscode.ThemeIcon(node.row.icon);
        item.contextValue = 'attempt';
        item.command = {
          command: 'harnessRl.openAttemptOutput',
          title: 'Open Attempt Output',
          arguments: [{ kind: 'attempt', attempt: node.attempt }],
        };
        return item;
      }
      case 'message':
        return messageItem(node);
    }
  }

  /** A 'node' event that changes what the row shows replaces it; the view redraws at most every 300 ms. */
  onEvent(e: DaemonEvent): void {
    if (e.type === 'rollout') {
      this.attempts.onRollout(e.rollout);
      return;
    }
    if (e.type === 'workers' || e.type === 'run') {
      this.onRunEvent(e);
      return;
    }
    if (e.type !== 'node' || !this.nodes) return;
    const shown = this.nodes.get(e.node.id);
    if (shown && !nodeChanged(shown, e.node)) return;
    this.nodes.set(e.node.id, e.node);
    this.redraw.schedule();
  }

  /**
   * A run's new workers replace its row (and drop its attempts read so far: a new worker's attempts
   * show); a run that stops running leaves the view. The view redraws at most every 300 ms.
   */
  private onRunEvent(e: Extract<DaemonEvent, { type: 'workers' | 'run' }>): void {
    const shown = this.runWorkers;
    if (!shown) return;
    if (e.type === 'run') {
      if (e.run.status !== 'running' && shown.delete(e.run.id)) this.redraw.schedule();
      return;
    }
    const entry = shown.get(e.workers.run_id);
    if (entry) {
      if (JSON.stringify(entry.workers) === JSON.stringify(e.workers)) return;
      entry.workers = e.workers;
    } else if (showsWorkers(e.workers)) {
      // a run started after the view was filled: list the running runs again (their names)
      this.runWorkers = undefined;
    } else return;
    this.attempts.drop(e.workers.run_id);
    this.redraw.schedule();
  }

  dispose(): void {
    this.attempts.dispose();
    this.redraw.dispose();
    this.emitter.dispose();
  }
}

/** Running runs (first page of GET /api/runs) with their workers (GET /api/runs/:id/workers). */
async function listRunWorkers(
  client: DaemonClient,
): Promise<Map<string, { run: Pick<Run, 'id' | 'name'>; workers: RunWorkers }>> {
  const runs = (await client.listRuns()).items.filter((r) => r.status === 'running');
  const out = new Map<string, { run: Pick<Run, 'id' | 'name'>; workers: RunWorkers }>();
  for (const run of runs) {
    const workers = await client.runWorkers(run.id).catch(() => null); // a run that just ended
    if (workers) out.set(run.id, { run, workers });
  }
  return out;
}

/** The attempts of a run's newest rollouts. */
async function recentAttempts(client: DaemonClient, runId: string): Promise<Attempt[]> {
  const rollouts = (await client.listRollouts({ run_id: runId, limit: ROLLOUTS_READ })).items;
  const details = await Promise.all(rollouts.map((r) => client.getRollout(r.id).catch(() => null)));
  return details.flatMap((d) => d?.attempts ?? []);
}
