// The run's `validation:` thresholds (protocol/config.ts ValidationConfig) against each step's metrics:
// which figures are past their threshold, and when the run must pause. Pure.
import type { ValidationConfig } from '../protocol/config';
import type { StepValidation } from '../protocol/training';

/** A step's StepValidation as per-step metrics (the names the thresholds and the dashboard use). */
export function validationMetrics(v: StepValidation | null | undefined): Record<string, number | null> {
  // A trainer that does not report agreement adds no keys (no empty charts); one that found no
  // rollout logprobs in the batch says so with 0 tokens.
  if (v === undefined) return {};
  return {
    rollout_logprob_tokens: v?.tokens ?? 0,
    logprob_diff_mean: v?.logprob_diff_mean ?? null,
    logprob_diff_max: v?.logprob_diff_max ?? null,
    prob_correlation: v?.prob_correlation ?? null,
    tis_weight_mean: v?.tis_weight_mean ?? null,
    tis_capped_fraction: v?.tis_capped_fraction ?? null,
  };
}

export interface Breach {
  step: number;
  /** the metric, e.g. logprob_diff_mean */
  figure: string;
  value: number;
  bound: 'min' | 'max';
  threshold: number;
}

/**
 * The thresholds a step's metrics are past. `<figure>_max` is past when the figure is above it, `<figure>_min`
 * when below. Not checked: steps before `after_step`, figures the step has no number for, and the agreement
 * figures of a step with fewer than `min_tokens` tokens with a rollout logprob (clip_fraction still is).
 */
export function breachesOf(
  config: ValidationConfig,
  step: number,
  metrics: Record<string, number | null | undefined>,
): Breach[] {
  if (step < config.after_step) return [];
  const enoughTokens = (metrics.rollout_logprob_tokens ?? 0) >= config.min_tokens;
  const out: Breach[] = [];
  for (const [key, threshold] of Object.entries(config)) {
    const m = /^(\w+)_(min|max)$/.exec(key);
    if (!m || typeof threshold !== 'number') continue;
    const figure = m[1]!;
    const bound = m[2] as 'min' | 'max';
    if (figure !== 'clip_fraction' && !enoughTokens) continue;
    const value = metrics[figure];
    if (typeof value !== 'number' || !Number.isFinite(value)) continue;
    if (bound === 'max' ? value > threshold : value < threshold)
      out.push({ step, figure, value, bound, threshold });
  }
  return out;
}

const shown = (x: number) => String(Number(x.toPrecision(4)));

/** "logprob_diff_mean 0.2312 > 0.1 (validation.logprob_diff_mean_max)" */
export function breachText(b: Breach): string {
  return `${b.figure} ${shown(b.value)} ${b.bound === 'max' ? '>' : '<'} ${shown(b.threshold)} (validation.${b.figure}_${b.bound})`;
}

/** Counts consecutive steps past a threshold; says when the run must pause and why. */
export class ValidationGate {
  private streak = 0;
  constructor(private readonly config: ValidationConfig | undefined) {}

  get enabled(): boolean {
    return this.config !== undefined;
  }

  /** The step's breaches, and the pause message when this step makes `patience` in a row (else null). */
  observe(
    step: number,
    metrics: Record<string, number | null | undefined>,
  ): { breaches: Breach[]; pause: string | null } {
    if (!this.config) return { breaches: [], pause: null };
    const breaches = breachesOf(this.config, step, metrics);
    this.streak = breaches.length > 0 ? this.streak + 1 : 0;
    if (breaches.length === 0 || this.streak < this.config.patience) return { breaches, pause: null };
    const streak =
      this.config.patience > 1 ? ` (${this.streak} steps in a row, patience ${this.config.patience})` : '';
    return {
      breaches,
      pause: `validation paused the run after step ${step}: ${breaches.map(breachText).join('; ')}${streak}`,
    };
  }
}
