// Runs → steps → groups → rollouts → attempts → llm calls, paged with the daemon's cursors and kept
// live from /api/events (group, rollout, run events; redraws throttled). Nodes are cached by id, so
// an event redraws only what changed and VS Code keeps what was expanded. Training runs are the top
// rows; evaluations' runs (harness-rl eval, an evolution's candidates: many, and they never train)
// sit under one "Evaluation runs" row below them.
import * as vscode from 'vscode';
import type { RolloutDetail } from '../../daemon/protocol/api';
import type { Attempt, Group, LlmCall, Rollout, Run } from '../../daemon/protocol/entities';
import type { DaemonEvent } from '../../daemon/protocol/events';
import { count, formatNumber } from '../../webview/src/format';
import type { DaemonClient } from './client';
import {
  callLabel,
  formatReward,
  groupDescription,
  rewardColor,
  rolloutDescription,
  runDescription,
  runNames,
  statusIcon,
  taskText,
} from './labels';
import { errorRow, type MessageNode, messageItem } from './messageRow';
import { PagedList } from './paging';
import {
  filterText,
  groupsByStep,
  latestRollout,
  matchesFilter,
  type RolloutFilter,
  stepDescription,
  stepStatus,
} from './runsModel';
import { Throttle } from './throttle';

export type RunsNode =
  | { kind: 'run'; run: Run; groups: PagedList<Group> }
  | { kind: 'step'; run: Run; step: number; groups: Group[] }
  | { kind: 'group'; group: Group; rollouts: PagedList<Rollout> }
  | { kind: 'rollout'; rollout: Rollout; detail?: RolloutDetail; position?: number }
  | { kind: 'attempt'; attempt: Attempt; rollout: Rollout; calls: LlmCall[] }
  | { kind: 'call'; call: LlmCall; rollout: Rollout | undefined }
  | { kind: 'evaluations' }
  | { kind: 'more'; list: PagedList<{ id: string }>; parent: RunsNode | undefined }
  | { kind: 'filter' }
  | MessageNode;

export class RunsTree implements vscode.TreeDataProvider<RunsNode>, vscode.Disposable {
  private readonly emitter = new vscode.EventEmitter<RunsNode | undefined>();
  readonly onDidChangeTreeData = this.emitter.event;
  private runs: PagedList<Run> | undefined;
  private evaluationRuns: PagedList<Run> | undefined;
  private readonly evaluationsNode: RunsNode = { kind: 'evaluations' };
  /** Run rows' labels: the name, with when it started where names clash. */
  private labels = new Map<string, string>();
  private readonly nodes = new Map<string, RunsNode>();
  private readonly filterNode: RunsNode = { kind: 'filter' };
  private filter: RolloutFilter = {};
  private pendingFires = new Set<RunsNode | undefined>();
  private readonly fires = new Throttle(() => {
    const nodes = [...this.pendingFires];
    this.pendingFires.clear();
    if (nodes.includes(undefined)) this.emitter.fire(undefined);
    else for (const n of nodes) this.emitter.fire(n);
  }, 150);

  constructor(
    private readonly getClient: () => DaemonClient | undefined,
    private readonly pageSize: () => number,
  ) {}

  get currentFilter(): RolloutFilter {
    return this.filter;
  }

  /** Filters the groups (those with a matching rollout) and, inside them, the rollouts. */
  setFilter(f: RolloutFilter): void {
    this.filter = f;
    for (const n of this.nodes.values()) {
      if (n.kind === 'group') n.rollouts.reset();
      if (n.kind === 'run') n.groups.reset();
    }
    this.emitter.fire(undefined);
  }

  refresh(): void {
    this.runs = undefined;
    this.evaluationRuns = undefined;
    this.nodes.clear();
    this.emitter.fire(undefined);
  }

  private fireLater(node: RunsNode | undefined) {
    this.pendingFires.add(node);
    this.fires.schedule();
  }

  /** The cached node under `key`, updated by `update`, or a new one from `make`. */
  private cached<K extends RunsNode['kind']>(
    key: string,
    kind: K,
    update: (n: RunsNode & { kind: K }) => void,
    make: () => RunsNode & { kind: K },
  ): RunsNode & { kind: K } {
    const hit = this.nodes.get(key);
    if (hit?.kind === kind) {
      update(hit as RunsNode & { kind: K });
      return hit as RunsNode & { kind: K };
    }
    const node = make();
    this.nodes.set(key, node);
    return node;
  }

  private runNode(run: Run) {
    return this.cached(
      `run:${run.id}`,
      'run',
      (n) => {
        n.run = run;
      },
      () => ({
        kind: 'run',
        run,
        groups: new PagedList((cursor) =>
          this.client().runGroups(run.id, { ...this.filter, cursor, limit: this.pageSize() }),
        ),
      }),
    );
  }

  private stepNode(run: Run, step: number, groups: Group[]) {
    return this.cached(
      `step:${run.id}:${step}`,
      'step',
      (n) => {
        n.run = run;
        n.groups = groups;
      },
      () => ({ kind: 'step', run, step, groups }),
    );
  }

  private groupNode(group: Group) {
    return this.cached(
      `group:${group.id}`,
      'group',
      (n) => {
        n.group = group;
      },
      () => ({
        kind: 'group',
        group,
        rollouts: new PagedList((cursor) =>
          this.client().listRollouts({ group_id: group.id, ...this.filter, cursor, limit: this.pageSize() }),
        ),
      }),
    );
  }

  private rolloutNode(rollout: Rollout, position?: number) {
    return this.cached(
      `rollout:${rollout.id}`,
      'rollout',
      (n) => {
        const shown = latestRollout(n.rollout, rollout);
        if (shown !== n.rollout) {
          n.detail = undefined;
          n.rollout = shown;
        }
        if (position !== undefined) n.position = position;
      },
      () => ({ kind: 'rollout', rollout, position }),
    );
  }

  private client(): DaemonClient {
    const c = this.getClient();
    if (!c) throw new Error('the daemon is not running');
    return c;
  }

  async getChildren(node?: RunsNode): Promise<RunsNode[]> {
    if (!this.getClient()) return [];
    try {
      return await this.children(node);
    } catch (err) {
      return [errorRow(err)];
    }
  }

  private async children(node?: RunsNode): Promise<RunsNode[]> {
    if (!node) {
      this.runs ??= new PagedList((cursor) => this.client().listRuns(cursor, this.pageSize(), 'training'));
      this.evaluationRuns ??= new PagedList((cursor) =>
        this.client().listRuns(cursor, this.pageSize(), 'evaluation'),
      );
      const [runs, evaluationRuns] = await Promise.all([this.runs.ensure(), this.evaluationRuns.ensure()]);
      this.relabel();
      const out: RunsNode[] = filterText(this.filter) ? [this.filterNode] : [];
      out.push(...runs.map((r) => this.runNode(r)));
      if (this.runs.hasMore) out.push({ kind: 'more', list: this.runs, parent: undefined });
      if (evaluationRuns.length > 0) out.push(this.evaluationsNode);
      // no rows: the view's welcome content says so, with its Start Run… button
      return out;
    }
    switch (node.kind) {
      case 'evaluations': {
        const list = this.evaluationRuns;
        if (!list) return [];
        const out: RunsNode[] = (await list.ensure()).map((r) => this.runNode(r));
        if (list.hasMore) out.push({ kind: 'more', list, parent: node });
        return out;
      }
      case 'run': {
        const groups = await node.groups.ensure();
        const out: RunsNode[] = groupsByStep(groups).map((s) => this.stepNode(node.run, s.step, s.groups));
        if (node.groups.hasMore) out.push({ kind: 'more', list: node.groups, parent: node });
        if (out.length === 0)
          out.push({
            kind: 'message',
            text: filterText(this.filter) ? 'No groups match the filter' : 'No groups yet',
          });
        return out;
      }
      case 'step':
        return node.groups.map((g) => this.groupNode(g));
      case 'group': {
        // numbered and listed in the order they were made (ids sort by creation), whatever order
        // the pages came in
        const rollouts = [...(await node.rollouts.ensure())].sort((a, b) => (a.id < b.id ? -1 : 1));
        const out: RunsNode[] = rollouts.map((r, i) => this.rolloutNode(r, i + 1));
        if (node.rollouts.hasMore) out.push({ kind: 'more', list: node.rollouts, parent: node });
        return out;
      }
      case 'rollout': {
        node.detail ??= await this.client().getRollout(node.rollout.id);
        const d = node.detail;
        const out: RunsNode[] = d.attempts.map((a) => ({
          kind: 'attempt' as const,
          attempt: a,
          rollout: node.rollout,
          calls: d.llm_calls.filter((c) => c.attempt_id === a.id),
        }));
        for (const c of d.llm_calls) {
          if (!c.attempt_id || !d.attempts.some((a) => a.id === c.attempt_id)) {
            out.push({ kind: 'call', call: c, rollout: node.rollout });
          }
        }
        return out;
      }
      case 'attempt':
        return node.calls.map((c) => ({ kind: 'call' as const, call: c, rollout: node.rollout }));
      default:
        return [];
    }
  }

  /** Run rows' labels, from the runs loaded now. */
  private relabel() {
    this.labels = new Map([
      ...runNames(this.runs?.items ?? []),
      ...runNames(this.evaluationRuns?.items ?? []),
    ]);
  }

  /** "Load more" on a paged list. */
  async loadMore(node: RunsNode & { kind: 'more' }): Promise<void> {
    await node.list.loadMore();
    this.emitter.fire(node.parent);
  }

  getTreeItem(node: RunsNode): vscode.TreeItem {
    const C = vscode.TreeItemCollapsibleState;
    switch (node.kind) {
      case 'run': {
        const r = node.run;
        const label = this.labels.get(r.id) ?? r.name;
        const item = new vscode.TreeItem(label, C.Collapsed);
        item.id = `run:${r.id}`;
        item.description = runDescription(r);
        item.tooltip = new vscode.MarkdownString(
          `**${label}** \`${r.id}\`${label.startsWith(r.name) ? '' : ` (${r.name})`}\n\n${r.status}, step ${r.step}, model version ${r.model_version}, started ${new Date(r.created_at).toLocaleString()}${r.error ? `\n\nerror: ${r.error}` : ''}`,
        );
        item.iconPath = new vscode.ThemeIcon(statusIcon(r.status));
        item.contextValue = `run.${r.status}`;
        item.command = { command: 'harnessRl.openDashboard', title: 'Open Run Dashboard', arguments: [node] };
        return item;
      }
      case 'step': {
        const item = new vscode.TreeItem(`step ${node.step}`, C.Collapsed);
        item.id = `step:${node.run.id}:${node.step}`;
        item.description = stepDescription(node.groups);
        item.iconPath = new vscode.ThemeIcon(statusIcon(stepStatus(node.groups)));
        item.contextValue = 'step';
        return item;
      }
      case 'filter': {
        const item = new vscode.TreeItem(`Filter: ${filterText(this.filter)}`, C.None);
        item.id = 'filter';
        item.tooltip =
          'Only groups with a matching rollout, and in them only the matching rollouts. Click to change.';
        item.iconPath = new vscode.ThemeIcon('filter');
        item.command = { command: 'harnessRl.filterRollouts', title: 'Filter Rollouts…' };
        return item;
      }
      case 'group': {
        const g = node.group;
        const task = taskText(g.task_input);
        const item = new vscode.TreeItem(task || `group ${g.id.slice(-8)}`, C.Collapsed);
        item.id = `group:${g.id}`;
        item.description = groupDescription(g);
        item.tooltip = new vscode.MarkdownString().appendText(
          `${taskText(g.task_input, 500) || 'no task'}\n\ngroup ${g.id}, step ${g.step}, ${g.status}`,
        );
        item.iconPath = new vscode.ThemeIcon(statusIcon(g.status));
        item.contextValue = 'group';
        return item;
      }
      case 'rollout': {
        const r = node.rollout;
        const label = node.position ? `#${node.position}` : taskText(r.input) || `rollout ${r.id.slice(-8)}`;
        const item = new vscode.TreeItem(label, C.Collapsed);
        item.id = `rollout:${r.id}`;
        item.description = rolloutDescription(r);
        item.tooltip = new vscode.MarkdownString().appendText(
          `${taskText(r.input, 500) || 'no task'}\n\nrollout ${r.id}: ${r.status}, ${formatReward(r.reward)}, attempt ${formatNumber(r.attempt_count)} of ${formatNumber(r.max_attempts)}${r.error ? `\n\nerror${r.failure ? ` (${r.failure.kind}: ${r.failure.reason})` : ''}: ${r.error}` : ''}`,
        );
        const color = rewardColor(r.reward);
        item.iconPath = new vscode.ThemeIcon(
          statusIcon(r.status),
          color ? new vscode.ThemeColor(color) : undefined,
        );
        item.contextValue = `rollout.${r.status}`;
        item.command = { command: 'harnessRl.openTrajectory', title: 'Open Trajectory', arguments: [node] };
        return item;
      }
      case 'attempt': {
        const a = node.attempt;
        const item = new vscode.TreeItem(`attempt ${a.index}`, node.calls.length ? C.Collapsed : C.None);
        item.id = `attempt:${a.id}`;
        item.description = `${a.status} · ${count(node.calls.length, 'call')}${a.worker ? ` · ${a.worker}` : ''}`;
        item.tooltip = a.error ?? undefined;
        item.iconPath = new vscode.ThemeIcon(statusIcon(a.status));
        item.contextValue = 'attempt';
        return item;
      }
      case 'call': {
        const c = node.call;
        const { label, description } = callLabel(c);
        const item = new vscode.TreeItem(label, C.None);
        item.id = `call:${c.id}`;
        item.description = description;
        item.tooltip = c.error ?? undefined;
        item.iconPath = new vscode.ThemeIcon(statusIcon(c.status));
        item.contextValue = 'call';
        if (c.rollout_id) {
          item.command = {
            command: 'harnessRl.openTrajectory',
            title: 'Open Trajectory',
            arguments: [{ kind: 'rolloutId', id: c.rollout_id, call_id: c.id }],
          };
        }
        return item;
      }
      case 'evaluations': {
        const list = this.evaluationRuns;
        const item = new vscode.TreeItem('Evaluation runs', C.Collapsed);
        item.id = 'evaluations';
        item.description = list ? `${list.items.length}${list.hasMore ? '+' : ''}` : '';
        item.tooltip =
          "The runs of evaluations (Evaluate Harness…, an evolution's candidates): they score a harness and never train. Their figures are on the evaluation pages.";
        item.iconPath = new vscode.ThemeIcon('beaker');
        item.contextValue = 'evaluations';
        return item;
      }
      case 'more': {
        const item = new vscode.TreeItem('Load more…', C.None);
        item.iconPath = new vscode.ThemeIcon('ellipsis');
        item.contextValue = 'more';
        item.command = { command: 'harnessRl.loadMore', title: 'Load More', arguments: [node] };
        return item;
      }
      case 'message':
        return messageItem(node);
    }
  }

  /** Applies one live event to what is loaded; nothing is fetched for collapsed parts. */
  onEvent(e: DaemonEvent): void {
    switch (e.type) {
      case 'run': {
        const evaluation = e.run.kind === 'evaluation';
        const list = evaluation ? this.evaluationRuns : this.runs;
        if (!list) return;
        const existed = this.nodes.has(`run:${e.run.id}`);
        const first = list.loaded && list.items.length === 0;
        const node = this.runNode(e.run);
        if (!list.upsert(e.run)) return;
        if (existed) {
          this.fireLater(node);
          return;
        }
        // a new run may make names clash: relabel its rows (the first evaluation run adds their row)
        this.relabel();
        this.fireLater(evaluation && !first ? this.evaluationsNode : undefined);
        return;
      }
      case 'group': {
        const g = e.group;
        const run = this.nodes.get(`run:${g.run_id}`);
        if (run?.kind !== 'run' || !run.groups.loaded) return;
        const known = run.groups.items.some((x) => x.id === g.id);
        // a filtered list only takes groups the daemon listed (a new group has no matching rollout yet)
        if (!known && filterText(this.filter)) return;
        this.groupNode(g);
        if (run.groups.upsert(g)) this.fireLater(run);
        return;
      }
      case 'rollout':
        this.onRollout(e.rollout);
        return;
      case 'llm_call':
      case 'reward': {
        const id = e.type === 'llm_call' ? e.call.rollout_id : e.reward.rollout_id;
        const n = id ? this.nodes.get(`rollout:${id}`) : undefined;
        if (n?.kind === 'rollout' && n.detail) {
          n.detail = undefined;
          this.fireLater(n);
        }
        return;
      }
      default:
        return;
    }
  }

  /**
   * A rollout changed: its row, and its group's loaded list too, so that redrawing the group (when
   * the group or run changes) lists the new snapshot, not the one loaded when the group opened.
   */
  private onRollout(r: Rollout): void {
    const existing = this.nodes.get(`rollout:${r.id}`);
    const g = r.group_id ? this.nodes.get(`group:${r.group_id}`) : undefined;
    if (g?.kind === 'group') {
      const listed = g.rollouts.items.find((x) => x.id === r.id);
      // a new rollout row: redraw the group (a listed one redraws its own row below)
      if (listed) g.rollouts.upsert(latestRollout(listed, r));
      else if (matchesFilter(r, this.filter) && g.rollouts.upsert(r, 'back')) this.fireLater(g);
    }
    if (existing?.kind === 'rollout') {
      this.rolloutNode(r);
      this.fireLater(existing);
    }
  }

  dispose(): void {
    this.fires.dispose();
    this.emitter.dispose();
  }
}
