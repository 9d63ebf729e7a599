// Advantage estimators (shared/spec/samples.md, "Advantage"): one scalar per rollout, computed from the
// rewards of its group (rollouts with a null reward are left out before these run). Each estimator is a
// small pure function over the group's rewards, registered by its config name.
import type { AdvantageEstimator } from '../protocol/algorithm';

/** Added to the standard deviation so a near-constant group does not blow up. */
export const ADV_EPS = 1e-6;

export type AdvantageFn = (rewards: Float64Array) => Float64Array;

/** True when every reward of the group is the same value (a group of one counts): no learning signal. */
export function isZeroVariance(rewards: ArrayLike<number>): boolean {
  for (let i = 1; i < rewards.length; i++) if (rewards[i] !== rewards[0]) return false;
  return true;
}

function mean(r: Float64Array): number {
  let s = 0;
  for (let i = 0; i < r.length; i++) s += r[i];
  return s / r.length;
}

/**
 * `grpo`: A_i = (r_i − mean) / (std + eps), std the sample standard deviation (divide by n−1).
 * A group of size 1, or with std 0 (all rewards equal), gives 0.
 */
export function grpo(r: Float64Array): Float64Array {
  const n = r.length;
  const out = new Float64Array(n);
  if (n < 2 || isZeroVariance(r)) return out;
  const m = mean(r);
  let ss = 0;
  for (let i = 0; i < n; i++) ss += (r[i] - m) * (r[i] - m);
  const std = Math.sqrt(ss / (n - 1));
  for (let i = 0; i < n; i++) out[i] = (r[i] - m) / (std + ADV_EPS);
  return out;
}

/** `drgrpo` (Dr. GRPO): A_i = r_i − mean (no std normalisation). */
export function drgrpo(r: Float64Array): Float64Array {
  const n = r.length;
  const out = new Float64Array(n);
  if (isZeroVariance(r)) return out; // r_i − mean is exactly 0; avoid rounding noise
  const m = mean(r);
  for (let i = 0; i < n; i++) out[i] = r[i] - m;
  return out;
}

/** `rloo` (leave-one-out): A_i = r_i − mean(r_j, j≠i) = r_i − (Σr − r_i)/(n−1); size 1 gives 0. */
export function rloo(r: Float64Array): Float64Array {
  const n = r.length;
  const out = new Float64Array(n);
  if (n < 2 || isZeroVariance(r)) return out;
  let s = 0;
  for (let i = 0; i < n; i++) s += r[i];
  for (let i = 0; i < n; i++) out[i] = r[i] - (s - r[i]) / (n - 1);
  return out;
}

/** `reinforce`: A_i = r_i (the raw reward, no baseline). */
export function reinforce(r: Float64Array): Float64Array {
  return Float64Array.from(r);
}

export const advantageEstimators: Record<AdvantageEstimator, AdvantageFn> = {
  grpo,
  drgrpo,
  rloo,
  reinforce,
};
