// The statistics of evaluations, as small pure functions with their formulas: pass@k (the unbiased
// estimator of Chen et al. 2021), a seeded percentile bootstrap of the mean, a paired bootstrap and an
// exact two-sided sign test for comparing two evaluations task by task (the bootstrap's draws:
// mulberry32, so the same seed gives the same intervals).
import { mulberry32 } from '../random';

/**
 * pass@k from n attempts of which c passed: 1 − C(n−c, k) / C(n, k), computed as the product
 * 1 − Π_{i=n−c+1..n} (1 − k/i) (numerically stable). k > n is clamped to n (all attempts).
 */
export function passAtK(n: number, c: number, k: number): number {
  if (n <= 0) return 0;
  const kk = Math.min(k, n);
  if (n - c < kk) return 1;
  let prod = 1;
  for (let i = n - c + 1; i <= n; i++) prod *= 1 - kk / i;
  return 1 - prod;
}

export const mean = (xs: readonly number[]): number =>
  xs.length === 0 ? Number.NaN : xs.reduce((s, x) => s + x, 0) / xs.length;

/** The q-quantile (0..1) of sorted values, linear between neighbours. */
function quantile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return Number.NaN;
  const pos = (sorted.length - 1) * q;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return sorted[lo]! + (sorted[hi]! - sorted[lo]!) * (pos - lo);
}

export interface Interval {
  low: number;
  high: number;
  level: number;
  resamples: number;
  seed: number;
}

/**
 * Percentile bootstrap interval of the mean: resample the values with replacement `resamples` times
 * (seeded), take the (1−level)/2 and (1+level)/2 quantiles of the resampled means.
 */
export function bootstrapMean(values: readonly number[], seed = 0, resamples = 2000, level = 0.95): Interval {
  if (values.length === 0) return { low: Number.NaN, high: Number.NaN, level, resamples, seed };
  const next = mulberry32(seed);
  const means = new Array<number>(resamples);
  for (let b = 0; b < resamples; b++) {
    let s = 0;
    for (let i = 0; i < values.length; i++) s += values[Math.floor(next() * values.length)]!;
    means[b] = s / values.length;
  }
  means.sort((x, y) => x - y);
  return {
    low: quantile(means, (1 - level) / 2),
    high: quantile(means, (1 + level) / 2),
    level,
    resamples,
    seed,
  };
}

/** log C(n, k) by summing logs (n here is a count of tasks: small). */
function logChoose(n: number, k: number): number {
  let s = 0;
  for (let i = 1; i <= k; i++) s += Math.log(n - k + i) - Math.log(i);
  return s;
}

/**
 * Exact two-sided sign test: ties are dropped; with w wins and l losses (m = w + l), p =
 * min(1, 2 · P(X ≤ min(w, l))) for X ~ Binomial(m, ½).
 */
export function signTest(diffs: readonly number[]): {
  wins: number;
  losses: number;
  ties: number;
  p: number;
} {
  const wins = diffs.filter((d) => d > 0).length;
  const losses = diffs.filter((d) => d < 0).length;
  const ties = diffs.length - wins - losses;
  const m = wins + losses;
  if (m === 0) return { wins, losses, ties, p: 1 };
  let tail = 0;
  for (let i = 0; i <= Math.min(wins, losses); i++) tail += Math.exp(logChoose(m, i) - m * Math.LN2);
  return { wins, losses, ties, p: Math.min(1, 2 * tail) };
}
