// schedule.dynamic_sampling (DAPO's dynamic sampling, verl's filter_groups): a step whose finished groups
// hold fewer than groups_per_step informative groups (rewards not all equal, so a non-zero advantage)
// samples another round of groups, up to max_rounds more, and trains on the first groups_per_step
// informative ones in the order they were sampled (round, then the seeded task order). Zero-variance
// groups are dropped as with algorithm.drop_zero_variance_groups; a step left with none trains on nothing.
import type { Rollout } from '../protocol/entities';
import { isZeroVariance } from '../samples';
import type { Batch } from './batches';

const groupOf = (r: Rollout): string => r.group_id ?? r.id;

/**
 * The groups among `train` (a step's succeeded rollouts it may train on) whose rewards are not all
 * equal: at least two rewarded rollouts that differ, as the samples stage counts zero variance.
 */
export function informativeGroups(train: readonly Rollout[]): Set<string> {
  const rewards = new Map<string, number[]>();
  for (const r of train) {
    if (r.reward === null) continue;
    const group = groupOf(r);
    rewards.set(group, [...(rewards.get(group) ?? []), r.reward]);
  }
  return new Set([...rewards].filter(([, rs]) => !isZeroVariance(rs)).map(([group]) => group));
}

/** One batch of a step's rounds so far followed by the next round's groups. */
export function mergeBatches(first: Batch, more: Batch): Batch {
  return {
    step: first.step,
    groups: [...first.groups, ...more.groups],
    startedAt: first.startedAt,
    rounds: (first.rounds ?? 1) + (more.rounds ?? 1),
  };
}

/**
 * What the step trains on: `train` less the informative groups past the first `limit` in the batch's
 * order (the zero-variance ones stay, for the samples stage to count and drop); the groups kept (the
 * first `limit` informative ones: the others are closed as dropped); and the step's sampling_rounds,
 * sampled_groups, informative_groups and kept_groups.
 */
export function keepInformative(
  batch: Batch,
  train: readonly Rollout[],
  limit: number,
): { train: Rollout[]; kept: Set<string>; metrics: Record<string, number> } {
  const informative = informativeGroups(train);
  const kept = new Set(
    batch.groups
      .map((g) => g.id)
      .filter((id) => informative.has(id))
      .slice(0, limit),
  );
  const surplus = (id: string): boolean => informative.has(id) && !kept.has(id);
  return {
    train: train.filter((r) => !surplus(groupOf(r))),
    kept,
    metrics: {
      sampling_rounds: batch.rounds ?? 1,
      sampled_groups: batch.groups.length,
      informative_groups: informative.size,
      kept_groups: kept.size,
    },
  };
}
