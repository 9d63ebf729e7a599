// Runs → groups → rollouts → attempts → llm calls, paged with the daemon's cursors and kept live
// from /api/events. Nodes are cached by id so a live event refreshes only what changed.
import * as vscode from 'vscode';
import type { RolloutDetail } from '../../daemon/protocol/api';
import type { Attempt, Group, LlmCall, Rollout, RolloutStatus, Run } from '../../daemon/protocol/entities';
import type { DaemonEvent } from '../../daemon/protocol/events';
import type { DaemonClient } from './client';
import { errorText } from './client';
import { callLabel, rolloutDescription, statusIcon } from './labels';
import { PagedList } from './paging';
import { Throttle } from './throttle';

export interface RolloutFilter {
  status?: RolloutStatus;
  min_reward?: number;
  max_reward?: number;
}

export type RunsNode =
  | { kind: 'run'; run: Run; groups: PagedList<Group>; filtered: PagedList<Rollout> }
  | { kind: 'filtered'; run: Run; list: PagedList<Rollout> }
  | { kind: 'group'; group: Group; rollouts: PagedList<Rollout> }
  | { kind: 'rollout'; rollout: Rollout; detail?: RolloutDetail }
  | { kind: 'attempt'; attempt: Attempt; rollout: Rollout; calls: LlmCall[] }
  | { kind: 'call'; call: LlmCall; rollout: Rollout | undefined }
  | { kind: 'more'; list: PagedList<{ id: string }>; parent: RunsNode | undefined }
  | { kind: 'message'; text: string; icon?: string };

export function filterText(f: RolloutFilter): string {
  const parts: string[] = [];
  if (f.status) parts.push(`status=${f.status}`);
  if (f.min_reward !== undefined) parts.push(`reward≥${f.min_reward}`);
  if (f.max_reward !== undefined) parts.push(`reward≤${f.max_reward}`);
  return parts.join(', ');
}

export class RunsTree implements vscode.TreeDataProvider<RunsNode>, vscode.Disposable {
  private readonly emitter = new vscode.EventEmitter<RunsNode | undefined>();
  readonly onDidChangeTreeData = this.emitter.event;
  private runs: PagedList<Run> | undefined;
  private readonly nodes = new Map<string, RunsNode>();
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

  setFilter(f: RolloutFilter): void {
    this.filter = f;
    for (const n of this.nodes.values()) {
      if (n.kind === 'group') n.rollouts.reset();
      if (n.kind === 'run') n.filtered.reset();
    }
    this.emitter.fire(undefined);
  }

  refresh(): void {
    this.runs = undefined;
    this.nodes.clear();
    this.emitter.fire(undefined);
  }

  private fireLater(node: RunsNode | undefined) {
    this.pendingFires.add(node);
    this.fires.schedule();
  }

  private runNode(run: Run): RunsNode & { kind: 'run' } {
    const key = `run:${run.id}`;
    const cached = this.nodes.get(key);
    if (cached?.kind === 'run') {
      cached.run = run;
      return cached;
    }
    const node: RunsNode & { kind: 'run' } = {
      kind: 'run',
      run,
      groups: new PagedList((cursor) => this.client().runGroups(run.id, cursor, this.pageSize())),
      filtered: new PagedList((cursor) =>
        this.client().listRollouts({ run_id: run.id, ...this.filter, cursor, limit: this.pageSize() }),
      ),
    };
    this.nodes.set(key, node);
    return node;
  }

  private groupNode(group: Group): RunsNode & { kind: 'group' } {
    const key = `group:${group.id}`;
    const cached = this.nodes.get(key);
    if (cached?.kind === 'group') {
      cached.group = group;
      return cached;
    }
    const node: RunsNode & { kind: 'group' } = {
      kind: 'group',
      group,
      rollouts: new PagedList((cursor) =>
        this.client().listRollouts({ group_id: group.id, ...this.filter, cursor, limit: this.pageSize() }),
      ),
    };
    this.nodes.set(key, node);
    return node;
  }

  private rolloutNode(rollout: Rollout): RunsNode & { kind: 'rollout' } {
    const key = `rollout:${rollout.id}`;
    const cached = this.nodes.get(key);
    if (cached?.kind === 'rollout') {
      if (cached.rollout.updated_at !== rollout.updated_at) cached.detail = undefined;
      cached.rollout = rollout;
      return cached;
    }
    const node: RunsNode & { kind: 'rollout' } = { kind: 'rollout', rollout };
    this.nodes.set(key, node);
    return node;
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
      return [{ kind: 'message', text: errorText(err), icon: 'error' }];
    }
  }

  private async children(node?: RunsNode): Promise<RunsNode[]> {
    if (!node) {
      this.runs ??= new PagedList((cursor) => this.client().listRuns(cursor, this.pageSize()));
      const runs = await this.runs.ensure();
      const out: RunsNode[] = runs.map((r) => this.runNode(r));
      if (this.runs.hasMore) out.push({ kind: 'more', list: this.runs, parent: undefined });
      if (out.length === 0)
        out.push({ kind: 'message', text: 'No runs yet — Start Run… from a config file', icon: 'info' });
      return out;
    }
    switch (node.kind) {
      case 'run': {
        const out: RunsNode[] = [];
        if (filterText(this.filter)) out.push({ kind: 'filtered', run: node.run, list: node.filtered });
        const groups = await node.groups.ensure();
        out.push(...groups.map((g) => this.groupNode(g)));
        if (node.groups.hasMore) out.push({ kind: 'more', list: node.groups, parent: node });
        return out;
      }
      case 'filtered': {
        const rollouts = await node.list.ensure();
        const out: RunsNode[] = rollouts.map((r) => this.rolloutNode(r));
        if (node.list.hasMore) out.push({ kind: 'more', list: node.list, parent: node });
        if (out.length === 0) out.push({ kind: 'message', text: 'No rollouts match the filter' });
        return out;
      }
      case 'group': {
        const rollouts = await node.rollouts.ensure();
        const out: RunsNode[] = rollouts.map((r) => this.rolloutNode(r));
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
        const item = new vscode.TreeItem(r.name, C.Collapsed);
        item.id = `run:${r.id}`;
        item.description = `${r.status} · step ${r.step} · v${r.model_version}`;
        item.tooltip = new vscode.MarkdownString(
          `**${r.name}** \`${r.id}\`\n\nstatus ${r.status}, step ${r.step}, model version ${r.model_version}${r.error ? `\n\nerror: ${r.error}` : ''}`,
        );
        item.iconPath = new vscode.ThemeIcon(statusIcon(r.status));
        item.contextValue = `run.${r.status}`;
        item.command = { command: 'harnessRl.openDashboard', title: 'Open Run Dashboard', arguments: [node] };
        return item;
      }
      case 'filtered': {
        const item = new vscode.TreeItem(`Rollouts (${filterText(this.filter)})`, C.Expanded);
        item.id = `filtered:${node.run.id}:${filterText(this.filter)}`;
        item.iconPath = new vscode.ThemeIcon('filter');
        return item;
      }
      case 'group': {
        const g = node.group;
        const item = new vscode.TreeItem(`group ${g.id.slice(-8)}`, C.Collapsed);
        item.id = `group:${g.id}`;
        item.description = `${g.status} · step ${g.step} · ${g.size} rollouts`;
        item.iconPath = new vscode.ThemeIcon(statusIcon(g.status));
        item.contextValue = 'group';
        return item;
      }
      case 'rollout': {
        const r = node.rollout;
        const item = new vscode.TreeItem(`rollout ${r.id.slice(-8)}`, C.Collapsed);
        item.id = `rollout:${r.id}`;
        item.description = rolloutDescription(r);
        item.tooltip = new vscode.MarkdownString(
          `rollout \`${r.id}\`\n\nstatus ${r.status}, reward ${r.reward ?? '—'}, attempts ${r.attempt_count}/${r.max_attempts}${r.error ? `\n\nerror: ${r.error}` : ''}`,
        );
        item.iconPath = new vscode.ThemeIcon(statusIcon(r.status));
        item.contextValue = `rollout.${r.status}`;
        item.command = { command: 'harnessRl.openTrajectory', title: 'Open Trajectory', arguments: [node] };
        return item;
      }
      case 'attempt': {
        const a = node.attempt;
        const item = new vscode.TreeItem(`attempt ${a.index}`, node.calls.length ? C.Collapsed : C.None);
        item.id = `attempt:${a.id}`;
        item.description = `${a.status} · ${node.calls.length} calls${a.worker ? ` · ${a.worker}` : ''}`;
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
      case 'more': {
        const item = new vscode.TreeItem('Load more…', C.None);
        item.iconPath = new vscode.ThemeIcon('ellipsis');
        item.contextValue = 'more';
        item.command = { command: 'harnessRl.loadMore', title: 'Load More', arguments: [node] };
        return item;
      }
      case 'message': {
        const item = new vscode.TreeItem(node.text, C.None);
        item.iconPath = new vscode.ThemeIcon(node.icon ?? 'info');
        return item;
      }
    }
  }

  /** Applies one live event to what is loaded; nothing is fetched for collapsed parts. */
  onEvent(e: DaemonEvent): void {
    switch (e.type) {
      case 'run': {
        if (!this.runs) return;
        const existed = this.nodes.has(`run:${e.run.id}`);
        const node = this.runNode(e.run);
        if (this.runs.upsert(e.run)) this.fireLater(existed ? node : undefined);
        return;
      }
      case 'rollout': {
        const r = e.rollout;
        const existing = this.nodes.get(`rollout:${r.id}`);
        if (existing?.kind === 'rollout') {
          this.rolloutNode(r);
          this.fireLater(existing);
        } else if (r.group_id) {
          const g = this.nodes.get(`group:${r.group_id}`);
          if (g?.kind === 'group' && g.rollouts.upsert(r, 'back')) this.fireLater(g);
        }
        return;
      }
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

  dispose(): void {
    this.fires.dispose();
    this.emitter.dispose();
  }
}
