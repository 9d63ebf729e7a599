// The run's `validation:` thresholds: which steps are past them and when the run pauses, with what message.
import { describe, expect, it } from 'vitest';
import { RunConfig, ValidationConfig } from '../protocol/config';
import { breachesOf, ValidationGate, validationMetrics } from './validation-gate';

const config = (c: Record<string, unknown>) => ValidationConfig.parse(c);
const step = (m: Record<string, number | null>) => ({ rollout_logprob_tokens: 100, ...m });

describe('validation thresholds', () => {
  it('a figure above its _max or below its _min is past it; equal is not', () => {
    const c = config({ logprob_diff_mean_max: 0.1, prob_correlation_min: 0.9, clip_fraction_max: 0.2 });
    expect(
      breachesOf(c, 3, step({ logprob_diff_mean: 0.1, prob_correlation: 0.9, clip_fraction: 0.2 })),
    ).toEqual([]);
    expect(
      breachesOf(c, 3, step({ logprob_diff_mean: 0.25, prob_correlation: 0.5, clip_fraction: 0.1 })),
    ).toEqual([
      { step: 3, figure: 'logprob_diff_mean', value: 0.25, bound: 'max', threshold: 0.1 },
      { step: 3, figure: 'prob_correlation', value: 0.5, bound: 'min', threshold: 0.9 },
    ]);
  });

  it('skips steps before after_step, missing figures, and agreement figures of a step with too few tokens', () => {
    const c = config({ logprob_diff_max_max: 1, clip_fraction_max: 0.2, after_step: 2, min_tokens: 10 });
    expect(breachesOf(c, 1, step({ logprob_diff_max: 5, clip_fraction: 0.9 }))).toEqual([]);
    expect(breachesOf(c, 2, step({ logprob_diff_max: null, clip_fraction: null }))).toEqual([]);
    const few = { rollout_logprob_tokens: 9, logprob_diff_max: 5, clip_fraction: 0.9 };
    expect(breachesOf(c, 2, few).map((b) => b.figure)).toEqual(['clip_fraction']);
  });

  it('pauses on the first step past a threshold with a message naming the step, figure, value and threshold', () => {
    const gate = new ValidationGate(config({ tis_capped_fraction_max: 0.05 }));
    expect(gate.observe(0, step({ tis_capped_fraction: 0.01 })).pause).toBeNull();
    expect(gate.observe(1, step({ tis_capped_fraction: 0.123456 })).pause).toBe(
      'validation paused the run after step 1: tis_capped_fraction 0.1235 > 0.05 (validation.tis_capped_fraction_max)',
    );
  });

  it('with patience n pauses only after n steps in a row past a threshold; a good step starts the count over', () => {
    const gate = new ValidationGate(config({ logprob_diff_mean_max: 0.1, patience: 3 }));
    const bad = step({ logprob_diff_mean: 0.5 });
    const good = step({ logprob_diff_mean: 0.01 });
    const pauses = [bad, bad, good, bad, bad, bad].map((m, i) => gate.observe(i, m).pause);
    expect(pauses.slice(0, 5)).toEqual([null, null, null, null, null]);
    expect(pauses[5]).toBe(
      'validation paused the run after step 5: logprob_diff_mean 0.5 > 0.1 (validation.logprob_diff_mean_max) (3 steps in a row, patience 3)',
    );
  });

  it('a run without validation: never pauses', () => {
    const gate = new ValidationGate(undefined);
    expect(gate.enabled).toBe(false);
    expect(gate.observe(0, step({ logprob_diff_mean: 99, clip_fraction: 1 }))).toEqual({
      breaches: [],
      pause: null,
    });
  });

  it('a trainer without agreement figures adds no metrics; a batch without rollout logprobs adds 0 tokens', () => {
    expect(validationMetrics(undefined)).toEqual({});
    expect(validationMetrics(null)).toMatchObject({ rollout_logprob_tokens: 0, logprob_diff_mean: null });
  });

  it('the run config names an unknown or out-of-range threshold', () => {
    const base = { name: 'x', tasks: { file: 't.jsonl' } };
    const typo = RunConfig.safeParse({ ...base, validation: { logprob_diff_mean_maxx: 0.1 } });
    expect(typo.success).toBe(false);
    expect(JSON.stringify(typo.error?.issues)).toContain('logprob_diff_mean_maxx');
    const range = RunConfig.safeParse({ ...base, validation: { prob_correlation_min: 2 } });
    expect(range.error?.issues[0]?.path).toEqual(['validation', 'prob_correlation_min']);
    expect(RunConfig.parse(base).validation).toBeUndefined();
  });
});
