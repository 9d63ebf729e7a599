// Which charts the run dashboard draws and how metric rows become uPlot series: smoothing,
// several runs on one step axis, a y axis for flat lines. Pure.
import type { RunMetrics } from '../../daemon/protocol/entities';

export interface ChartSpec {
  title: string;
  /** the metric key used (first of the candidates present in the data) */
  key: string;
}

/**
 * Charts in order; each lists the metric names the trainer/scheduler may use for it. `optional` ones (the
 * train/inference agreement, which not every trainer reports) show only when a step has them.
 */
export const CHARTS: { title: string; keys: string[]; optional?: boolean }[] = [
  { title: 'Mean reward', keys: ['reward_mean', 'mean_reward', 'reward'] },
  { title: 'Loss', keys: ['loss', 'policy_loss'] },
  { title: 'KL', keys: ['kl', 'kl_mean', 'approx_kl'] },
  { title: 'Entropy', keys: ['entropy', 'entropy_mean'] },
  { title: 'Clip fraction', keys: ['clip_fraction', 'clipfrac', 'clip_frac'] },
  { title: 'Logprob diff |trainer − rollout|, mean', keys: ['logprob_diff_mean'], optional: true },
  { title: 'Logprob diff |trainer − rollout|, max', keys: ['logprob_diff_max'], optional: true },
  { title: 'Trainer/rollout prob correlation', keys: ['prob_correlation'], optional: true },
  { title: 'TIS weight, mean', keys: ['tis_weight_mean'], optional: true },
  { title: 'TIS weight capped, share', keys: ['tis_capped_fraction'], optional: true },
  { title: 'Tokens/s', keys: ['tokens_per_s', 'tokens_per_second', 'throughput_tokens_per_s'] },
  { title: 'Prefix breaks per step', keys: ['prefix_breaks', 'prefix_breaks_per_step'] },
  { title: 'Lost rollouts per step (failed after all attempts)', keys: ['lost_rollouts'], optional: true },
  { title: 'Sampling rounds per step (dynamic sampling)', keys: ['sampling_rounds'], optional: true },
  { title: 'Informative groups trained on (dynamic sampling)', keys: ['kept_groups'], optional: true },
  {
    title: 'Attempts failed for the infrastructure (retried)',
    keys: ['failed_attempts.infrastructure'],
    optional: true,
  },
];

/** The charts for the keys present: the known charts first (always shown), then every other key. */
export function chartSpecs(rows: RunMetrics[]): ChartSpec[] {
  const present = new Set(rows.flatMap((r) => Object.keys(r.metrics)));
  const used = new Set<string>();
  const specs: ChartSpec[] = [];
  for (const c of CHARTS) {
    const key = c.keys.find((k) => present.has(k));
    for (const k of c.keys) used.add(k);
    if (key || !c.optional) specs.push({ title: c.title, key: key ?? c.keys[0]! });
  }
  for (const k of [...present].sort()) if (!used.has(k)) specs.push({ title: metricTitle(k), key: k });
  return specs;
}

/** A metric key as a chart title: "dropped_groups" → "Dropped groups". */
export function metricTitle(key: string): string {
  const words = key.replace(/[_.-]+/g, ' ').trim();
  return words.charAt(0).toUpperCase() + words.slice(1);
}

/**
 * TensorBoard's smoothing: an exponential moving average with weight w in [0, 1), debiased so the
 * first points are not pulled towards 0: s_t = m_t / (1 − w^n), m_t = w·m_{t−1} + (1 − w)·y_t,
 * n = finite points so far. Missing or non-finite values stay as they are and do not move the average.
 */
export function smooth(values: (number | null)[], weight: number): (number | null)[] {
  if (weight <= 0) return values.slice();
  let m = 0;
  let n = 0;
  return values.map((y) => {
    if (y === null || !Number.isFinite(y)) return y;
    m = weight * m + (1 - weight) * y;
    n++;
    return m / (1 - weight ** n);
  });
}

/** Several [steps, values] series on one step axis (the union of their steps), null where a series has no point. */
export function alignSeries(series: [number[], (number | null)[]][]): [number[], ...(number | null)[][]] {
  const steps = [...new Set(series.flatMap(([xs]) => xs))].sort((a, b) => a - b);
  const columns = series.map(([xs, ys]) => {
    const at = new Map(xs.map((x, i) => [x, ys[i]]));
    return steps.map((s) => at.get(s) ?? null);
  });
  return [steps, ...columns];
}

/** The y range for a chart whose values are all equal (uPlot would draw 0 on a 0–100 axis): a small band around the value. */
export function flatRange(value: number): [number, number] {
  if (value === 0) return [0, 1];
  const pad = Math.abs(value) * 0.1;
  return [value - pad, value + pad];
}

/** uPlot's columnar data for one key: [steps, values], sorted by step, one row per step. */
export function seriesOf(rows: RunMetrics[], key: string): [number[], (number | null)[]] {
  const byStep = new Map<number, number | null>();
  for (const r of rows) if (key in r.metrics) byStep.set(r.step, r.metrics[key] ?? null);
  const steps = [...byStep.keys()].sort((a, b) => a - b);
  return [steps, steps.map((s) => byStep.get(s) ?? null)];
}

/** The last step with a value for `key`, and that value. */
export function latest(rows: RunMetrics[], key: string): { step: number; value: number } | null {
  const [steps, values] = seriesOf(rows, key);
  for (let i = steps.length - 1; i >= 0; i--) {
    const v = values[i];
    if (v !== null && Number.isFinite(v)) return { step: steps[i], value: v };
  }
  return null;
}

/** Adds or replaces the row for the same step. */
export function upsertMetrics(rows: RunMetrics[], row: RunMetrics): RunMetrics[] {
  const i = rows.findIndex((r) => r.step === row.step);
  if (i < 0) return [...rows, row];
  const next = rows.slice();
  next[i] = { ...rows[i], metrics: { ...rows[i].metrics, ...row.metrics } };
  return next;
}

/** The run's `validation:` thresholds on a metric (`<key>_max`, `<key>_min`), for lines on its chart. */
export function thresholdsOf(config: unknown, key: string): { bound: 'min' | 'max'; value: number }[] {
  const v = (config as { validation?: Record<string, unknown> } | null)?.validation;
  if (!v || typeof v !== 'object') return [];
  const out: { bound: 'min' | 'max'; value: number }[] = [];
  for (const bound of ['min', 'max'] as const) {
    const value = v[`${key}_${bound}`];
    if (typeof value === 'number' && Number.isFinite(value)) out.push({ bound, value });
  }
  return out;
}

/** Steps whose train/inference agreement (and so a scatter) exists: some tokens had a rollout logprob. */
export function agreementSteps(rows: RunMetrics[]): number[] {
  return rows
    .filter((r) => (r.metrics.rollout_logprob_tokens ?? 0) > 0)
    .map((r) => r.step)
    .sort((a, b) => a - b);
}
