// The policy-loss part of vectors.json: whole-step token cases (decoupled, bypass, dual clip, unknown and
// floored rollout logprobs, a large train/inference mismatch) with their expected losses, gradients and
// StepValidation figures, which both trainers check themselves against (spec/samples.md).
import { knownLogprob, policyTokenLoss, type TokenLossConfig } from './loss';

/** The most (rollout prob, trainer prob) pairs a step's validation scatter carries. */
export const SCATTER_MAX = 512;

/**
 * The deterministic scatter subsample: of n tokens (in batch order, then position), all when n ≤ max,
 * else the tokens at floor(i · n / max) for i = 0 … max − 1.
 */
export function scatterIndices(n: number, max = SCATTER_MAX): number[] {
  if (n <= max) return Array.from({ length: n }, (_, i) => i);
  return Array.from({ length: max }, (_, i) => Math.floor((i * n) / max));
}

/**
 * StepValidation over the tokens whose rollout logprob μ is known, as written in spec/samples.md: mean and
 * max |old − μ|, the Pearson correlation of exp(old) and exp(μ) (null for fewer than two tokens or a
 * constant side), the mean TIS weight min(exp(clamp20(old − μ)), C) (1 in bypass mode) and the share of
 * tokens at the cap (0 in bypass mode), and the scatter [exp(μ), exp(old)] of the subsample.
 */
export function stepValidationOf(old: number[], mu: (number | null)[], tisCap: number | null) {
  const pairs: [number, number][] = [];
  old.forEach((o, t) => {
    const m = mu[t];
    if (m !== null && knownLogprob(m)) pairs.push([o, m]);
  });
  const n = pairs.length;
  if (n === 0) return null;
  const diffs = pairs.map(([o, m]) => Math.abs(o - m));
  const x = pairs.map(([o]) => Math.exp(o));
  const y = pairs.map(([, m]) => Math.exp(m));
  const mean = (v: number[]) => v.reduce((a, b) => a + b, 0) / v.length;
  const mx = mean(x);
  const my = mean(y);
  let sxy = 0;
  let sxx = 0;
  let syy = 0;
  for (let i = 0; i < n; i++) {
    sxy += (x[i] - mx) * (y[i] - my);
    sxx += (x[i] - mx) ** 2;
    syy += (y[i] - my) ** 2;
  }
  const weights =
    tisCap === null
      ? pairs.map(() => 1)
      : pairs.map(([o, m]) => Math.min(Math.exp(Math.min(Math.max(o - m, -20), 20)), tisCap));
  const capped = tisCap === null ? 0 : weights.filter((w) => w >= tisCap).length;
  return {
    tokens: n,
    logprob_diff_mean: mean(diffs),
    logprob_diff_max: Math.max(...diffs),
    prob_correlation: n > 1 && sxx > 0 && syy > 0 ? sxy / Math.sqrt(sxx * syy) : null,
    tis_weight_mean: mean(weights),
    tis_capped_fraction: capped / n,
    scatter: scatterIndices(n).map((i): [number, number] => [y[i], x[i]]),
  };
}

interface TokenCaseInput {
  name: string;
  loss: Required<TokenLossConfig>;
  logp: number[];
  old_logp: number[];
  /** null: absent; −9999: vLLM's floor */
  rollout_logp: (number | null)[];
  advantage: number[];
  weights: number[];
}

function tokenCase(c: TokenCaseInput) {
  const parts = c.logp.map((lp, t) =>
    policyTokenLoss(lp, c.old_logp[t], c.rollout_logp[t] ?? Number.NaN, c.advantage[t], c.loss),
  );
  return {
    ...c,
    expected: {
      token_loss: parts.map((p) => p.loss),
      grad: parts.map((p, t) => c.weights[t] * p.dlogp),
      clipped: parts.map((p) => p.clipped),
      tis_weight: parts.map((p) => p.tisWeight),
      total: parts.reduce((s, p, t) => s + c.weights[t] * p.loss, 0),
    },
    validation: stepValidationOf(c.old_logp, c.rollout_logp, c.loss.tis_cap),
  };
}

const ln = Math.log;
const base = { clip_low: 0.2, clip_high: 0.28 };

/** π/μ = 1.5 (under the cap), e³ (over it), e^−0.7; μ unknown (absent, −9999); old − μ beyond 20. */
const firstUpdate = [-1, -0.5, -0.5, -2, -0.3, -1.2, -0.7, -0.05, -3];
const firstUpdateMu = [-1, -0.5 - ln(1.5), -3.5, -1.3, null, -9999, -40, -0.05, -2.9];

export function tokenLossCases() {
  return [
    tokenCase({
      name: 'decoupled, first update (old = lp): the gradient weight is min(π/μ, C)',
      loss: { ...base, tis_cap: 2, dual_clip: null },
      logp: firstUpdate,
      old_logp: firstUpdate,
      rollout_logp: firstUpdateMu,
      advantage: [1, -1, -1, 1, 0.5, -0.5, 2, -2, 1],
      weights: [0.125, 0.125, 0.125, 0.125, 0.1, 0.1, 0.1, 0.1, 0.1],
    }),
    tokenCase({
      name: 'decoupled, a later minibatch (lp != old): the ratio against old is clipped',
      loss: { ...base, tis_cap: 1.5, dual_clip: null },
      logp: [-0.5, -1.5, -0.5, -1.5, -1, -0.2],
      old_logp: [-1, -1, -1, -1, -0.9, -0.4],
      rollout_logp: [-1.1, null, -0.6, -9999, -0.9, -3],
      advantage: [1, 1, -1, -1, 0, -0.5],
      weights: [0.2, 0.2, 0.2, 0.2, 0.1, 0.1],
    }),
    tokenCase({
      name: 'decoupled with dual clip 3',
      loss: { ...base, tis_cap: 2, dual_clip: 3 },
      logp: [-0.2, -1, -0.5],
      old_logp: [-2.2, -1, -0.5],
      rollout_logp: [-2, -5, null],
      advantage: [-1, -1, -1],
      weights: [0.5, 0.25, 0.25],
    }),
    tokenCase({
      name: 'bypass (tis_cap null): the ratio against the rollout logprob, clamped to e^±20',
      loss: { ...base, tis_cap: null, dual_clip: null },
      logp: [-1, -0.5, -0.5, -2, -0.3, -0.1, -1.2, -0.7],
      old_logp: [-1, -0.5, -0.5, -2, -0.3, -0.1, -1.2, -0.7],
      rollout_logp: [-1, -0.5 - ln(1.5), -3.5, -1.3, null, -25, -9999, -0.2],
      advantage: [1, -1, -1, 1, 0.5, -1, -0.5, 1],
      weights: [0.125, 0.125, 0.125, 0.125, 0.125, 0.125, 0.125, 0.125],
    }),
    tokenCase({
      name: 'bypass with dual clip 3',
      loss: { ...base, tis_cap: null, dual_clip: 3 },
      logp: [-0.5, -0.1, -0.5],
      old_logp: [-0.5, -0.1, -0.5],
      rollout_logp: [-3.5, -25, -0.5 - ln(1.5)],
      advantage: [-1, -1, -1],
      weights: [1 / 3, 1 / 3, 1 / 3],
    }),
    tokenCase({
      name: 'no known rollout logprob: validation is null',
      loss: { ...base, tis_cap: 2, dual_clip: null },
      logp: [-1, -2],
      old_logp: [-1, -2],
      rollout_logp: [null, -9999],
      advantage: [1, -1],
      weights: [0.5, 0.5],
    }),
  ];
}
