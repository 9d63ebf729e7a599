// The policy-loss part of vectors.json: whole-step token cases (decoupled, bypass, dual clip, unknown and
// floored rollout logprobs, a large train/inference mismatch) with their expected losses, gradients and
// StepValidation figures, which both trainers check themselves against (spec/samples.md); the GSPO
// (sequence ratio) and CISPO (clipped IS weight) cases the same way.
import { policySequenceLoss, policyTokenLoss, type TokenLossConfig } from './loss';
import { stepValidation } from './validation';

interface TokenCaseInput {
  name: string;
  loss: Required<Omit<TokenLossConfig, 'policy_ratio' | 'policy_loss'>>;
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
    validation: stepValidation(
      c.old_logp,
      c.rollout_logp.map((m) => m ?? Number.NaN),
      c.loss.tis_cap,
    ),
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

interface SequenceCaseInput extends TokenCaseInput {
  loss: Required<Omit<TokenLossConfig, 'policy_loss'>>;
  /** per token: the sequence (training sample) it belongs to */
  sequence_ids: number[];
}

/** policySequenceLoss over each sequence's tokens, in the case's token order. */
function sequenceCase(c: SequenceCaseInput) {
  const n = c.logp.length;
  const parts: ReturnType<typeof policySequenceLoss> = new Array(n);
  const logS: number[] = new Array(n);
  for (const id of new Set(c.sequence_ids)) {
    const idx = c.sequence_ids.flatMap((s, t) => (s === id ? [t] : []));
    const pick = <T>(xs: T[]) => idx.map((t) => xs[t]);
    const mu = pick(c.rollout_logp).map((m) => m ?? Number.NaN);
    const got = policySequenceLoss(pick(c.logp), pick(c.old_logp), mu, pick(c.advantage), c.loss);
    const mean = got.reduce((a, p) => a + p.logRatio, 0) / got.length;
    idx.forEach((t, k) => {
      parts[t] = got[k];
      logS[t] = mean;
    });
  }
  return {
    ...c,
    expected: {
      log_ratio: parts.map((p) => p.logRatio),
      sequence_log_ratio: logS,
      token_loss: parts.map((p) => p.loss),
      grad: parts.map((p, t) => c.weights[t] * p.dlogp),
      clipped: parts.map((p) => p.clipped),
      tis_weight: parts.map((p) => p.tisWeight),
      total: parts.reduce((s, p, t) => s + c.weights[t] * p.loss, 0),
    },
  };
}

const seq = { ...base, policy_ratio: 'sequence' as const };
/** seq-mean-token-mean weights 1/(B·m_s) of sequences of the given lengths, in order. */
const seqMeanWeights = (lengths: number[]) => lengths.flatMap((m) => Array(m).fill(1 / (lengths.length * m)));
const ids = (lengths: number[]) => lengths.flatMap((m, i) => Array(m).fill(i));

/** GSPO cases: the ratio of each sequence is exp(mean of its tokens' log-ratios). */
export function sequenceLossCases() {
  return [
    sequenceCase({
      name: 'sequence ratio, decoupled, a later minibatch: s inside, above 1+ε_high (A > 0), below 1−ε_low (A < 0); one token alone',
      loss: { ...seq, tis_cap: 2, dual_clip: null },
      logp: [-0.8, -0.5, -1.2, -0.9, -0.2, -0.6, -0.1, -0.7, -2.0, -1.5, -1.0],
      old_logp: [-1.0, -0.6, -1.0, -1.0, -0.7, -1.0, -0.5, -1.0, -1.5, -1.3, -0.8],
      rollout_logp: [-1.1, null, -1.0, -9999, -1.0, -3.0, -0.5, -0.9, -1.4, null, -0.85],
      advantage: [0.5, 1, 1, 1, 1, 1, 1, 1, -1, -1, -1],
      weights: seqMeanWeights([1, 3, 4, 3]),
      sequence_ids: ids([1, 3, 4, 3]),
    }),
    sequenceCase({
      name: 'sequence ratio, decoupled, first update (old = lp): s = 1, each token weighs −A by its TIS weight',
      loss: { ...seq, tis_cap: 2, dual_clip: null },
      logp: [-1, -0.5, -0.5, -2, -0.3, -1.2],
      old_logp: [-1, -0.5, -0.5, -2, -0.3, -1.2],
      rollout_logp: [-1, -0.5 - ln(1.5), -3.5, null, -9999, -1.5],
      advantage: [1, 1, 1, -0.5, -0.5, -0.5],
      weights: seqMeanWeights([3, 3]),
      sequence_ids: ids([3, 3]),
    }),
    sequenceCase({
      name: 'sequence ratio, bypass: against μ, clamped to ±20 per token (that token gets no gradient, the others −s·A), s below 1−ε_low on A < 0, lp − old where μ is unknown',
      loss: { ...seq, tis_cap: null, dual_clip: null },
      logp: [-0.5, -0.1, -0.3, -0.2, -0.4, -0.6, -1.0, -0.4, -0.3, -0.9, -0.2, -1.1, -0.6],
      old_logp: [-0.5, -0.1, -0.3, -0.2, -0.4, -0.6, -1.0, -0.4, -0.3, -0.9, -0.2, -1.1, -0.6],
      rollout_logp: [-0.7, -25, -0.2, -0.3, -0.5, -0.6, -0.7, -0.2, -0.1, null, -9999, -1.5, -1.0],
      advantage: [-1, -1, -1, -1, -1, -1, -1, -1, -1, 1, 1, 1, 1],
      weights: seqMeanWeights([6, 3, 4]),
      sequence_ids: ids([6, 3, 4]),
    }),
    sequenceCase({
      name: 'sequence ratio, decoupled with dual clip 3: s = e² on A < 0 costs 3·A·w, s = e^0.5 stays under the cap',
      loss: { ...seq, tis_cap: 2, dual_clip: 3 },
      logp: [-0.2, -1, -0.5, -0.5, -1.0],
      old_logp: [-2.2, -3, -2.5, -1.0, -1.5],
      rollout_logp: [-2, -5, null, -1.0, -1.6],
      advantage: [-1, -1, -1, -1, -1],
      weights: seqMeanWeights([3, 2]),
      sequence_ids: ids([3, 2]),
    }),
    sequenceCase({
      name: 'sequence ratio, bypass with dual clip 3',
      loss: { ...seq, tis_cap: null, dual_clip: 3 },
      logp: [-0.5, -0.1, -0.5, -0.4, -0.6],
      old_logp: [-0.5, -0.1, -0.5, -0.4, -0.6],
      rollout_logp: [-3.5, -2.1, -0.5 - ln(1.5), -0.5, -0.6],
      advantage: [-1, -1, -1, -1, -1],
      weights: seqMeanWeights([2, 3]),
      sequence_ids: ids([2, 3]),
    }),
  ];
}

interface CispoCaseInput extends Omit<TokenCaseInput, 'loss'> {
  loss: Required<Omit<TokenLossConfig, 'policy_ratio'>>;
}

/** policyTokenLoss with policy_loss cispo per token; `ppo_grad` the same tokens' PPO-clip gradient. */
function cispoCase(c: CispoCaseInput) {
  const { validation: _, ...out } = tokenCase(c);
  const ppo = { ...c.loss, policy_loss: 'ppo' as const };
  const ppoGrad = c.logp.map(
    (lp, t) =>
      c.weights[t] *
      policyTokenLoss(lp, c.old_logp[t], c.rollout_logp[t] ?? Number.NaN, c.advantage[t], ppo).dlogp,
  );
  return { ...out, expected: { ...out.expected, ppo_grad: ppoGrad } };
}

const cispo = { ...base, policy_loss: 'cispo' as const };

/** CISPO cases: ℓ_t = −clip(r_t, 1−ε_low, 1+ε_high)·A_t·lp_t (· the TIS weight), the weight detached. */
export function cispoLossCases() {
  return [
    cispoCase({
      name: 'cispo, decoupled, a later minibatch: r inside (the PPO gradient), above 1+ε_high and below 1−ε_low on either sign of A (clipped weight, a gradient still), μ absent and floored',
      loss: { ...cispo, tis_cap: 2, dual_clip: null },
      logp: [-0.9, -0.2, -0.2, -1.6, -1.6, -0.5, -1.0, -0.4],
      old_logp: [-1.0, -0.8, -0.8, -1.0, -1.0, -0.6, -0.9, -0.7],
      rollout_logp: [-1.2, -0.9, null, -1.1, -9999, -0.7, -2.0, -0.6],
      advantage: [1, 1, -1, 1, -1, -0.5, 0, 2],
      weights: [0.125, 0.125, 0.125, 0.125, 0.125, 0.125, 0.125, 0.125],
    }),
    cispoCase({
      name: 'cispo, decoupled, first update (old = lp): weight 1, ℓ = −A·lp·min(π/μ, C)',
      loss: { ...cispo, tis_cap: 2, dual_clip: null },
      logp: firstUpdate,
      old_logp: firstUpdate,
      rollout_logp: firstUpdateMu,
      advantage: [1, -1, -1, 1, 0.5, -0.5, 2, -2, 1],
      weights: [0.125, 0.125, 0.125, 0.125, 0.1, 0.1, 0.1, 0.1, 0.1],
    }),
    cispoCase({
      name: "cispo, bypass: against μ, clamped to ±20 (the weight clipped, the token's gradient kept), lp − old where μ is unknown, r above 1+ε_high on A > 0 (PPO: no gradient); no lower bound (clip_low 10, verl's example): r = e^−0.5 stays",
      loss: { ...cispo, clip_low: 10, tis_cap: null, dual_clip: null },
      logp: [-1, -0.5, -0.5, -2, -0.3, -0.1, -1.2, -0.7, -0.2],
      old_logp: [-1, -0.5, -0.5, -2, -0.3, -0.1, -1.2, -0.7, -0.2],
      rollout_logp: [-1, -0.5 - ln(1.5), -3.5, -1.3, null, -25, -9999, -0.2, -1],
      advantage: [1, -1, -1, 1, 0.5, -1, -0.5, 1, 1],
      weights: Array(9).fill(1 / 9),
    }),
    cispoCase({
      name: 'cispo ignores dual clip (as verl does): r = e² on A < 0 is clipped to 1+ε_high, not capped at −c·A',
      loss: { ...cispo, tis_cap: 2, dual_clip: 3 },
      logp: [-0.2, -1, -0.5],
      old_logp: [-2.2, -1, -0.5],
      rollout_logp: [-2, -5, null],
      advantage: [-1, -1, -1],
      weights: [0.5, 0.25, 0.25],
    }),
  ];
}
