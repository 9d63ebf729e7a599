// The reference engine with policy_loss cispo: a batch PPO-clip cannot learn from still trains.
import { describe, expect, it } from 'vitest';
import type { PolicyLossConfig, Sample } from '../protocol/training';
import { GRADIENT_CHECK_MODEL, gradientGap } from './gradient-check';
import { initParams } from './layout';
import { Model } from './model';
import { sampleLossAndGrad } from './trainer';

const cfg = GRADIENT_CHECK_MODEL;
const T = 11;
/** Rollout logprobs of −30: every trained token's lp − μ is past +20 (bypass clamps it, the weight is 1.28). */
const sample: Sample = {
  rollout_id: 'r',
  group_id: 'g',
  index: 0,
  input_ids: Int32Array.from({ length: T }, (_, i) => (i * 7 + 3) % 23),
  loss_mask: Uint8Array.from({ length: T }, (_, i) => (i >= 3 ? 1 : 0)),
  advantages: Float32Array.from({ length: T }, (_, i) => (i >= 3 ? (i % 2 ? 0.7 : -0.4) : 0)),
  old_logprobs: Float64Array.from({ length: T }, (_, i) => (i >= 3 ? -30 : Number.NaN)),
  loss_weights: Float64Array.from({ length: T }, (_, i) => (i >= 3 ? 1 / (T - 3) : 0)),
};
const loss: PolicyLossConfig = {
  clip_low: 0.2,
  clip_high: 0.28,
  tis_cap: null,
  kl_coef: 0,
  learning_rate: 1e-3,
  policy_loss: 'cispo',
};
const stats = () => ({ loss: 0, tokens: 0, clipped: 0, kl: 0, entropy: 0 });

describe('reference engine, policy_loss cispo', () => {
  it('every weight clipped (bypass, ratio e^20): PPO-clip has no gradient, CISPO −1.28·A·w per token, the finite difference of its loss', () => {
    const model = new Model(cfg, initParams(cfg, 3));
    const gradOf = (l: PolicyLossConfig) => {
      const st = stats();
      const grad = new Float64Array(model.params.length);
      sampleLossAndGrad(model, sample, l, grad, st, null);
      return { st, grad };
    };
    const ppo = gradOf({ ...loss, policy_loss: 'ppo' });
    expect(ppo.grad.every((g) => g === 0)).toBe(true);
    const { st, grad } = gradOf(loss);
    expect(st.clipped).toBe(st.tokens);
    expect(st.tokens).toBe(T - 3);
    // the weight is constant here, so the loss −1.28·Σ w·A·lp has exactly the gradient CISPO takes
    const f = () => {
      const s = stats();
      sampleLossAndGrad(model, sample, loss, null, s, null);
      return s.loss;
    };
    const { worst, checked } = gradientGap(model.params, f, grad);
    expect(checked).toBeGreaterThan(100);
    expect(worst).toBeLessThan(1e-5);
  });
});
