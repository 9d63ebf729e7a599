// A running evaluation's attempts counted (pure: the loop announces them, the evaluation page counts
// the same way from a run's rollouts when it opens mid-run).
import type { RolloutStatus } from '../protocol/entities';
import type { EvaluationProgress } from '../protocol/evaluation';

/**
 * `slots` attempts (tasks × attempts) from the statuses of all their rollouts: every rollout past the
 * first of its slot is a retry of a failed one, so `retried` = rollouts − slots, and the failed rollouts
 * that were retried are not failed attempts.
 */
export function attemptProgress(
  ids: { evaluation_id: string; run_id: string },
  slots: number,
  statuses: readonly RolloutStatus[],
): EvaluationProgress {
  const n = (s: RolloutStatus) => statuses.filter((x) => x === s).length;
  const retried = Math.max(0, statuses.length - slots);
  const queued = n('queued') + Math.max(0, slots - statuses.length);
  const succeeded = n('succeeded');
  const failed = Math.max(0, n('failed') + n('cancelled') - retried);
  return {
    ...ids,
    total: slots,
    queued,
    running: n('running'),
    finished: succeeded + failed,
    succeeded,
    failed,
    retried,
  };
}
