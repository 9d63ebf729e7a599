// Runs → steps → groups → rollouts → attempts → llm calls, paged with the daemon's cursors and kept
// live from /api/events (group, rollout, run events; redraws throttled). Nodes are cached by id, so
// an event redraws only what changed and VS Code keeps what was expanded. Training runs are the top
// rows; evaluations' runs (harness-rl eval, an evolution's candidates: many, and they never train)
// sit under one "Evaluation runs" row below them.
import * as vscode from 'vscode';
import type { Group, Rollout, Run } from '../../daemon/protocol/entities';
import type { DaemonEvent } from '../../daemon/protocol/events';
import type { DaemonClient } from './client';
import { runNames } from './labels';
import { errorRow } from './messageRow';
import { PagedList } from './paging';
import { evaluationsItem, filterItem, type RunsNode, rowItem, runItem } from './runsItems';
import { filterText, groupsByStep, latestRollout, matchesFilter, type RolloutFilter } from './runsModel';
import { Throttle } from './throttle';

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
    switch (node.kind) {
      case 'run':
        return runItem(node, this.labels.get(node.run.id) ?? node.run.name);
      case 'filter':
        return filterItem(this.filter);
      case 'evaluations':
        return evaluationsItem(this.evaluationRuns);
      default:
        return rowItem(node);
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
