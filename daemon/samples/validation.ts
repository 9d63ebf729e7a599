// Train/inference agreement of one training step (shared/spec/samples.md, "Each step reports"): from the
// trainer's pre-update logprobs and the rollout logprobs of the same mask tokens. Pure.
import type { StepValidation } from '../protocol/training';
import { knownLogprob } from './loss';

/** The most (rollout prob, trainer prob) pairs a step's validation scatter carries (its schema's limit). */
export const SCATTER_MAX = 512;

/**
 * The deterministic scatter subsample, the same in both trainers: of n tokens (in batch order, then
 * position), all when n ≤ max, else the tokens at floor(i · n / max) for i = 0 … max − 1.
 */
export function scatterIndices(n: number, max = SCATTER_MAX): number[] {
  if (n <= max) return Array.from({ length: n }, (_, i) => i);
  return Array.from({ length: max }, (_, i) => Math.floor((i * n) / max));
}

const clamp20 = (x: number) => Math.min(20, Math.max(-20, x));

/**
 * Over the tokens whose rollout logprob `mu_t` is known (pairs with an unknown one are skipped):
 * - `logprob_diff_mean`, `logprob_diff_max`: mean and max of `|old_t − mu_t|`;
 * - `prob_correlation`: Pearson correlation of `exp(old_t)` and `exp(mu_t)` (null when either is constant
 *   or fewer than two tokens);
 * - `tis_weight_mean`: mean `w_t = min(exp(clamp20(old_t − mu_t)), C)`, 1 in bypass mode (`tisCap` null);
 * - `tis_capped_fraction`: share of tokens with `exp(clamp20(old_t − mu_t)) ≥ C` (0 in bypass mode);
 * - `scatter`: (rollout prob, trainer prob) pairs of the `scatterIndices` subsample.
 * Null when no token has a known rollout logprob. `old` and `mu` are aligned (same length).
 */
export function stepValidation(
  old: ArrayLike<number>,
  mu: ArrayLike<number>,
  tisCap: number | null,
): StepValidation | null {
  if (old.length !== mu.length)
    throw new RangeError(`stepValidation: ${old.length} trainer logprobs but ${mu.length} rollout logprobs`);
  const known: number[] = [];
  for (let i = 0; i < old.length; i++) if (knownLogprob(mu[i]) && Number.isFinite(old[i])) known.push(i);
  const n = known.length;
  if (n === 0) return null;
  let diffSum = 0;
  let diffMax = 0;
  let weightSum = 0;
  let capped = 0;
  let pSum = 0;
  let qSum = 0;
  for (const i of known) {
    const d = old[i] - mu[i];
    diffSum += Math.abs(d);
    diffMax = Math.max(diffMax, Math.abs(d));
    if (tisCap === null) weightSum += 1;
    else {
      const ratio = Math.exp(clamp20(d));
      weightSum += Math.min(ratio, tisCap);
      if (ratio >= tisCap) capped++;
    }
    pSum += Math.exp(old[i]);
    qSum += Math.exp(mu[i]);
  }
  return {
    tokens: n,
    logprob_diff_mean: diffSum / n,
    logprob_diff_max: diffMax,
    prob_correlation: correlation(known, old, mu, pSum / n, qSum / n),
    tis_weight_mean: weightSum / n,
    tis_capped_fraction: capped / n,
    scatter: scatterOf(known, old, mu),
  };
}

/** Pearson correlation of exp(old) and exp(mu) over `known`, two-pass around the given means. */
function correlation(
  known: number[],
  old: ArrayLike<number>,
  mu: ArrayLike<number>,
  pMean: number,
  qMean: number,
): number | null {
  let sxy = 0;
  let sxx = 0;
  let syy = 0;
  for (const i of known) {
    const x = Math.exp(old[i]) - pMean;
    const y = Math.exp(mu[i]) - qMean;
    sxy += x * y;
    sxx += x * x;
    syy += y * y;
  }
  if (known.length < 2 || sxx === 0 || syy === 0) return null;
  return Math.max(-1, Math.min(1, sxy / Math.sqrt(sxx * syy)));
}

/** The scatter's pairs (see stepValidation), in batch order. */
function scatterOf(known: number[], old: ArrayLike<number>, mu: ArrayLike<number>): [number, number][] {
  return scatterIndices(known.length).map((k) => [Math.exp(mu[known[k]]), Math.exp(old[known[k]])]);
}
