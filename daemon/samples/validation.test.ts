// A step's train/inference agreement figures (shared/spec/samples.md, "Each step reports"), hand-computed.
import { describe, expect, it } from 'vitest';
import { SCATTER_MAX, scatterIndices, stepValidation } from './validation';

const ln = Math.log;

describe('step validation figures', () => {
  // Five mask tokens; the last two have no usable rollout logprob (vLLM's −9999 floor, absent = NaN).
  const old = [ln(0.5), ln(0.6), ln(0.1), ln(0.9), ln(0.3)];
  const mu = [ln(0.5), ln(0.2), ln(0.4), -9999, Number.NaN];

  it('reports over the tokens with a known rollout logprob: diffs, correlation, TIS weight and the share capped', () => {
    const v = stepValidation(old, mu, 2)!;
    expect(v.tokens).toBe(3);
    // |old − mu| = 0, ln 3, ln 4
    expect(v.logprob_diff_mean).toBeCloseTo((ln(3) + ln(4)) / 3, 12);
    expect(v.logprob_diff_max).toBeCloseTo(ln(4), 12);
    // p = (0.5, 0.6, 0.1), mean 0.4; q = (0.5, 0.2, 0.4), mean 11/30:
    // Σxy = −0.03, Σx² = 0.14, Σy² = 42/900
    expect(v.prob_correlation).toBeCloseTo(-0.03 / Math.sqrt(0.14 * (42 / 900)), 12);
    // w = min(exp(old − mu), 2) = 1, min(3, 2) = 2 (capped), 0.25
    expect(v.tis_weight_mean).toBeCloseTo(3.25 / 3, 12);
    expect(v.tis_capped_fraction).toBeCloseTo(1 / 3, 12);
    // (rollout prob, trainer prob)
    const expected = [
      [0.5, 0.5],
      [0.2, 0.6],
      [0.4, 0.1],
    ];
    expect(v.scatter).toHaveLength(3);
    v.scatter.forEach(([rollout, trainer], i) => {
      expect(rollout).toBeCloseTo(expected[i][0], 12);
      expect(trainer).toBeCloseTo(expected[i][1], 12);
    });
  });

  it('in bypass mode (no tis_cap) the weight is 1 and nothing is capped', () => {
    const v = stepValidation(old, mu, null)!;
    expect(v.tis_weight_mean).toBe(1);
    expect(v.tis_capped_fraction).toBe(0);
  });

  it('clamps the log-ratio to ±20 before the TIS weight, so a far-off token weighs the cap, not Infinity', () => {
    const v = stepValidation([0, -1000], [-1000, 0], 2)!;
    expect(v.tis_weight_mean).toBeCloseTo((2 + Math.exp(-20)) / 2, 12);
    expect(v.tis_capped_fraction).toBe(0.5);
    expect(v.logprob_diff_max).toBe(1000);
  });

  it('is null for a batch without rollout logprobs, and the correlation is null for constant probabilities', () => {
    expect(stepValidation([ln(0.5)], [Number.NaN], 2)).toBeNull();
    expect(stepValidation([], [], 2)).toBeNull();
    const flat = stepValidation([ln(0.5), ln(0.5)], [ln(0.4), ln(0.3)], 2)!;
    expect(flat.prob_correlation).toBeNull();
    expect(stepValidation([ln(0.5)], [ln(0.5)], 2)!.prob_correlation).toBeNull();
  });

  it('agreeing logprobs give diff 0, correlation 1 and weight 1', () => {
    const lp = [ln(0.9), ln(0.5), ln(0.05), ln(0.3)];
    const v = stepValidation(lp, lp, 2)!;
    expect(v).toMatchObject({
      logprob_diff_mean: 0,
      logprob_diff_max: 0,
      tis_weight_mean: 1,
      tis_capped_fraction: 0,
    });
    expect(v.prob_correlation).toBeCloseTo(1, 12);
  });

  it('keeps 512 scatter points of a large batch, evenly spaced in batch order, the same every time', () => {
    const n = 5000;
    const o = Array.from({ length: n }, (_, i) => -1 - (i % 97) / 100);
    const m = o.map((x) => x - 0.01);
    const v = stepValidation(o, m, 2)!;
    expect(v.tokens).toBe(n);
    expect(v.scatter).toHaveLength(SCATTER_MAX);
    // floor(i · 5000 / 512): 0, 9, 19, … 4990
    expect(scatterIndices(n).slice(0, 3)).toEqual([0, 9, 19]);
    expect(v.scatter[2]).toEqual([Math.exp(m[19]), Math.exp(o[19])]);
    expect(v.scatter[511]).toEqual([Math.exp(m[4990]), Math.exp(o[4990])]);
    expect(stepValidation(o, m, 2)!.scatter).toEqual(v.scatter);
  });

  it('refuses trainer and rollout logprobs of different lengths', () => {
    expect(() => stepValidation([0, 0], [0], 2)).toThrow(/2 trainer logprobs but 1 rollout/);
  });
});
