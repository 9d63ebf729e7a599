// What the Runs view shows, as pure functions: the rollout filter, and a run's loaded groups by
// step (a run of 30 steps × 4 groups opens as 30 step rows, not 120 group rows).
import type { Group, Rollout, RolloutStatus } from '../../daemon/protocol/entities';
import { count } from '../../webview/src/format';

export interface RolloutFilter {
  status?: RolloutStatus;
  min_reward?: number;
  max_reward?: number;
}

export function filterText(f: RolloutFilter): string {
  const parts: string[] = [];
  if (f.status) parts.push(`status=${f.status}`);
  if (f.min_reward !== undefined) parts.push(`reward≥${f.min_reward}`);
  if (f.max_reward !== undefined) parts.push(`reward≤${f.max_reward}`);
  return parts.join(', ');
}

/** Whether a rollout passes the filter (as the daemon's rollout and group queries decide it). */
export function matchesFilter(r: Pick<Rollout, 'status' | 'reward'>, f: RolloutFilter): boolean {
  if (f.status && r.status !== f.status) return false;
  if (f.min_reward !== undefined && (r.reward === null || r.reward < f.min_reward)) return false;
  if (f.max_reward !== undefined && (r.reward === null || r.reward > f.max_reward)) return false;
  return true;
}

export interface StepRow {
  step: number;
  groups: Group[];
}

/** The loaded groups by step, newest step first, each step's groups in the order they were listed. */
export function groupsByStep(groups: readonly Group[]): StepRow[] {
  const byStep = new Map<number, Group[]>();
  for (const g of groups) {
    const list = byStep.get(g.step);
    if (list) list.push(g);
    else byStep.set(g.step, [g]);
  }
  return [...byStep.entries()].sort((a, b) => b[0] - a[0]).map(([step, gs]) => ({ step, groups: gs }));
}

/** Whether a run's config samples extra rounds (schedule.dynamic_sampling), closing the groups it left out dropped. */
export function usesDynamicSampling(config: unknown): boolean {
  return (config as { schedule?: { dynamic_sampling?: unknown } } | null)?.schedule?.dynamic_sampling != null;
}

/**
 * A step row's description: its groups, and how many are still open, failed or cancelled. With dynamic
 * sampling, once no group is open, how many it kept (closed complete) of those it sampled (not cancelled).
 */
export function stepDescription(
  groups: readonly Pick<Group, 'status'>[],
  options: { dynamicSampling?: boolean } = {},
): string {
  const open = groups.filter((g) => g.status === 'pending' || g.status === 'running').length;
  const failed = groups.filter((g) => g.status === 'failed').length;
  const cancelled = groups.filter((g) => g.status === 'cancelled').length;
  if (options.dynamicSampling && !open) {
    const kept = groups.filter((g) => g.status === 'complete').length;
    const parts = [`kept ${kept} of ${count(groups.length - cancelled, 'group')}`];
    if (failed) parts.push(`${failed} failed`);
    if (cancelled) parts.push(`${cancelled} cancelled`);
    return parts.join(' · ');
  }
  const parts = [count(groups.length, 'group')];
  if (open) parts.push(`${open} running`);
  if (failed) parts.push(`${failed} failed`);
  if (cancelled) parts.push(`${cancelled} cancelled`);
  if (!open && !failed && !cancelled) parts.push('complete');
  return parts.join(' · ');
}

/**
 * The icon status of a step: running while any group is open; failed, cancelled or dropped (dynamic
 * sampling kept none) when all are.
 */
export function stepStatus(groups: readonly Pick<Group, 'status'>[]): string {
  if (groups.some((g) => g.status === 'pending' || g.status === 'running')) return 'running';
  for (const end of ['failed', 'cancelled', 'dropped'] as const)
    if (groups.length > 0 && groups.every((g) => g.status === end)) return end;
  return 'complete';
}

/**
 * Of two snapshots of one rollout, the one to show: the later written (events and page loads can
 * arrive in either order; an older one must never put a finished rollout back to "queued").
 */
export function latestRollout<R extends Pick<Rollout, 'updated_at'>>(shown: R | undefined, next: R): R {
  return shown && shown.updated_at > next.updated_at ? shown : next;
}
