// The rollouts a step lost (failed after all their attempts) and what it trains on instead: the
// rollouts that finished, or, with `algorithm.incomplete_groups: drop`, only those of groups that lost
// none. A step left with nothing to train on is not a step: the run fails, naming why its rollouts
// failed. Failed rollouts never enter a group's advantages (they have no reward; see failures.ts).
import type { Rollout } from '../protocol/entities';
import type { FailureReason } from '../protocol/failures';
import type { Store } from '../store/store';

export interface StepRollouts {
  /** The succeeded rollouts the step trains on. */
  train: Rollout[];
  /** Groups left out because they lost a rollout (incomplete_groups: drop). */
  droppedGroups: Set<string>;
  /** lost_rollouts, lost_rollouts.<kind>, lost_rollouts.<reason>, dropped_incomplete_groups. */
  metrics: Record<string, number>;
}

const reasonOf = (r: Rollout): FailureReason | 'unknown' => r.failure?.reason ?? 'unknown';

/** Split a finished step's rollouts by the run's incomplete-groups policy and count what it lost. */
export function stepRollouts(rollouts: Rollout[], policy: 'train' | 'drop'): StepRollouts {
  const lost = rollouts.filter((r) => r.status === 'failed');
  const incomplete = new Set(lost.map((r) => r.group_id ?? r.id));
  const succeeded = rollouts.filter((r) => r.status === 'succeeded');
  const droppedGroups =
    policy === 'drop'
      ? new Set(succeeded.map((r) => r.group_id ?? r.id).filter((g) => incomplete.has(g)))
      : new Set<string>();
  const metrics: Record<string, number> = {
    lost_rollouts: lost.length,
    'lost_rollouts.infrastructure': 0,
    'lost_rollouts.harness': 0,
    dropped_incomplete_groups: droppedGroups.size,
  };
  for (const r of lost) {
    if (r.failure) metrics[`lost_rollouts.${r.failure.kind}`]++;
    const key = `lost_rollouts.${reasonOf(r)}`;
    metrics[key] = (metrics[key] ?? 0) + 1;
  }
  return {
    train: succeeded.filter((r) => !droppedGroups.has(r.group_id ?? r.id)),
    droppedGroups,
    metrics,
  };
}

/**
 * Why a step has nothing to train on, in words: how many rollouts failed for which reason, the latest
 * error of the most common reason, and the groups dropped as incomplete.
 */
export function nothingToTrainOn(step: number, rollouts: Rollout[], split: StepRollouts): string {
  const lost = rollouts.filter((r) => r.status === 'failed');
  const byReason = new Map<string, Rollout[]>();
  for (const r of lost) {
    const key = r.failure ? `${r.failure.kind}: ${r.failure.reason}` : 'unknown';
    byReason.set(key, [...(byReason.get(key) ?? []), r]);
  }
  const ranked = [...byReason].sort((a, b) => b[1].length - a[1].length);
  const counts = ranked.map(([why, rs]) => `${rs.length} ${why}`).join(', ');
  const example = ranked[0]?.[1].find((r) => r.error)?.error;
  const dropped = split.droppedGroups.size
    ? `; ${split.droppedGroups.size} group(s) that lost a rollout were dropped (algorithm.incomplete_groups: drop)`
    : '';
  const detail = lost.length
    ? `${lost.length} of its ${rollouts.length} rollouts failed after all their attempts (${counts})`
    : `none of its ${rollouts.length} rollouts succeeded`;
  return `step ${step} has no rollout to train on: ${detail}${dropped}${example ? `. Last error: ${example.slice(0, 2000)}` : ''}`;
}

/**
 * The step's failed attempts by kind, retried or not: `failed_attempts.infrastructure` and
 * `failed_attempts.harness` (only rollouts that took more than one attempt, or failed, are read).
 */
export async function failedAttempts(
  store: Pick<Store, 'listAttempts'>,
  rollouts: Rollout[],
): Promise<Record<string, number>> {
  const out = { 'failed_attempts.infrastructure': 0, 'failed_attempts.harness': 0 };
  for (const r of rollouts) {
    if (r.attempt_count < 2 && r.status !== 'failed') continue;
    for (const a of await store.listAttempts(r.id)) if (a.failure) out[`failed_attempts.${a.failure.kind}`]++;
  }
  return out;
}
