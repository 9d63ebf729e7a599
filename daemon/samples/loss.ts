// The per-token policy loss both trainers use (shared/spec/samples.md, "The per-token policy loss").
// The TypeScript reference engine imports these; the Python trainer checks itself against the same
// numbers in vectors.json ("policy_loss").

/** PPO clip range below 1 (ε_low) and above 1 (ε_high, "clip higher"). */
export const CLIP_LOW = 0.2;
export const CLIP_HIGH = 0.28;
/** Cap of the truncated importance-sampling weight between inference and trainer logprobs. */
export const TIS_CAP = 2.0;

/**
 * One token: ratio = exp(logp − old_logp); ℓ = −min(ratio · A, clip(ratio, 1−ε_low, 1+ε_high) · A).
 * `old_logp` is the rollout logprob when known, else the trainer's own logprob before the update.
 * Dual clip (Ye et al. 2020; off unless `dualClip` = c > 1): for A < 0, ℓ = min(ℓ, −c · A), so a huge
 * ratio on a negative advantage cannot blow up the step. The shared vectors use none.
 */
export function ppoClipTokenLoss(
  logp: number,
  oldLogp: number,
  advantage: number,
  clipLow = CLIP_LOW,
  clipHigh = CLIP_HIGH,
  dualClip: number | null = null,
): number {
  const ratio = Math.exp(logp - oldLogp);
  const clipped = Math.min(Math.max(ratio, 1 - clipLow), 1 + clipHigh);
  const loss = 0 - Math.min(ratio * advantage, clipped * advantage); // 0 − x: never −0 in the vectors
  return dualClipped(loss, advantage, dualClip) ? -dualClip! * advantage : loss;
}

/** Whether the dual clip's cap −c · A is below the PPO loss `loss` of a token (it then gets no gradient). */
export function dualClipped(loss: number, advantage: number, dualClip: number | null): boolean {
  return dualClip !== null && advantage < 0 && loss > -dualClip * advantage;
}

/** True where the clipped term wins, i.e. the token gets no gradient (counts toward clip_fraction). */
export function ppoClipped(
  logp: number,
  oldLogp: number,
  advantage: number,
  clipLow = CLIP_LOW,
  clipHigh = CLIP_HIGH,
): boolean {
  const ratio = Math.exp(logp - oldLogp);
  return (advantage > 0 && ratio > 1 + clipHigh) || (advantage < 0 && ratio < 1 - clipLow);
}

/** The per-token PPO-clip loss over arrays; `advantage` is per token or one scalar for all. */
export function ppoClipLoss(
  logp: ArrayLike<number>,
  oldLogp: ArrayLike<number>,
  advantage: ArrayLike<number> | number,
  clipLow = CLIP_LOW,
  clipHigh = CLIP_HIGH,
): Float64Array {
  const n = logp.length;
  if (oldLogp.length !== n || (typeof advantage !== 'number' && advantage.length !== n)) {
    throw new RangeError(`ppoClipLoss: lengths differ (logp ${n}, old ${oldLogp.length})`);
  }
  const out = new Float64Array(n);
  for (let t = 0; t < n; t++) {
    const a = typeof advantage === 'number' ? advantage : advantage[t];
    out[t] = ppoClipTokenLoss(logp[t], oldLogp[t], a, clipLow, clipHigh);
  }
  return out;
}

/**
 * Truncated importance sampling: w = min(exp(trainer_old_logp − inference_logp), cap), multiplied into
 * ℓ_t when the rollout logprobs came from an inference engine that differs from the trainer.
 */
export function truncatedIsWeight(trainerOldLogp: number, inferenceLogp: number, cap = TIS_CAP): number {
  return Math.min(Math.exp(trainerOldLogp - inferenceLogp), cap);
}

/** Per-token KL to a reference policy, the k3 estimator: exp(ref − logp) − (ref − logp) − 1 (≥ 0). */
export function klK3(logp: number, refLogp: number): number {
  const d = refLogp - logp;
  return Math.exp(d) - d - 1;
}

/** The batch loss L = Σ_t w_t · ℓ_t (weights from the samples stage, 0 on mask-0 tokens). */
export function weightedLoss(loss: ArrayLike<number>, weights: ArrayLike<number>): number {
  let s = 0;
  for (let t = 0; t < loss.length; t++) if (weights[t] !== 0) s += weights[t] * loss[t];
  return s;
}
