// The per-token policy loss both trainers use (shared/spec/samples.md, "The per-token policy loss").
// The TypeScript reference engine imports these; the Python trainer checks itself against the same
// numbers in vectors.json ("policy_loss").

/** PPO clip range below 1 (ε_low) and above 1 (ε_high, "clip higher"). */
export const CLIP_LOW = 0.2;
export const CLIP_HIGH = 0.28;
/** Default cap C of decoupled PPO's truncated importance-sampling weight (tis_cap). */
export const TIS_CAP = 2.0;

/**
 * One token: ratio = exp(logp − old_logp); ℓ = −min(ratio · A, clip(ratio, 1−ε_low, 1+ε_high) · A).
 * `old_logp` is the ratio's denominator (see policyTokenLoss for which logprob that is).
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
 * vLLM's floor for a logprob it cannot represent (−inf, NaN) in its OpenAI responses:
 * `max(step_token.logprob, -9999.0)` (vllm/entrypoints/openai/chat_completion/serving.py:1275,
 * completion/serving.py:833 in vLLM 0.34). A rollout logprob at or below it is unknown, like an absent one.
 */
export const VLLM_LOGPROB_FLOOR = -9999;

/** Whether a rollout (behaviour) logprob μ is known: finite and above vLLM's floor. */
export function knownLogprob(mu: number): boolean {
  return Number.isFinite(mu) && mu > VLLM_LOGPROB_FLOOR;
}

/** Clamp a log-ratio to [−20, 20] (exp stays finite; beyond it the token gets no gradient). */
export function clamp20(x: number): number {
  return Math.min(Math.max(x, -20), 20);
}

/**
 * Truncated importance sampling weight of decoupled PPO: w = min(exp(clamp20(old − μ)), cap), the
 * trainer's own pre-update logprob `old` against the rollout's μ. A constant factor (no gradient).
 */
export function truncatedIsWeight(trainerOldLogp: number, inferenceLogp: number, cap = TIS_CAP): number {
  return Math.min(Math.exp(clamp20(trainerOldLogp - inferenceLogp)), cap);
}

/** The parts of the policy loss config the per-token loss reads. */
export interface TokenLossConfig {
  clip_low: number;
  clip_high: number;
  tis_cap: number | null;
  dual_clip?: number | null;
  /** 'token' (absent: the spec's per-token ratio) or 'sequence' (GSPO; see policySequenceLoss) */
  policy_ratio?: PolicyRatio;
  /** 'ppo' (absent: the spec's PPO-clip) or 'cispo' (the clipped IS weight; see cispoFromLogRatio) */
  policy_loss?: PolicyLossMode;
}

/** Which PPO ratio the loss takes: each token's own, or its sequence's (GSPO). */
export type PolicyRatio = 'token' | 'sequence';
/** Which loss the ratio enters: PPO-clip, or CISPO's clipped, detached IS weight. */
export type PolicyLossMode = 'ppo' | 'cispo';

/** One token's loss, its derivative d/dlp, and what the step reports about it. */
export interface TokenLoss {
  loss: number;
  dlogp: number;
  /** the clipped PPO term won (no gradient; counts toward clip_fraction) */
  clipped: boolean;
  /** the TIS weight multiplied in (1 in bypass mode or where μ is unknown) */
  tisWeight: number;
  /** log of the PPO ratio's value (clamped where the spec clamps it) */
  logRatio: number;
}

/**
 * PPO-clip from the log-ratio x = log r: ℓ = −min(r·A, clip(r, 1−ε_low, 1+ε_high)·A), dℓ/dx = −r·A
 * unless clipped; the dual clip (A < 0, ℓ > −c·A) caps ℓ at −c·A with no gradient.
 */
function ppoFromLogRatio(
  x: number,
  A: number,
  clipLow: number,
  clipHigh: number,
  dualClip: number | null,
): { loss: number; dlogp: number; clipped: boolean } {
  const ratio = Math.exp(x);
  const loss = 0 - Math.min(ratio * A, Math.min(Math.max(ratio, 1 - clipLow), 1 + clipHigh) * A);
  const clipped = (A > 0 && ratio > 1 + clipHigh) || (A < 0 && ratio < 1 - clipLow);
  if (clipped) return { loss, dlogp: 0, clipped: true };
  if (dualClipped(loss, A, dualClip)) return { loss: -dualClip! * A, dlogp: 0, clipped: false };
  return { loss, dlogp: 0 - ratio * A, clipped: false };
}

/**
 * CISPO (MiniMax-M1, arXiv:2506.13585; verl's `loss_mode: cispo`) from the log-ratio x = log r: the
 * IS weight ŵ = clip(r, 1−ε_low, 1+ε_high) is detached and multiplies the REINFORCE term,
 * ℓ = −ŵ·A·lp (verl's value: the logprob itself, not the ratio, carries the gradient), dℓ/dlp = −ŵ·A for
 * every token; `clipped` where ŵ ≠ r (the weight was cut; the token keeps its gradient). No dual clip.
 */
function cispoFromLogRatio(
  x: number,
  lp: number,
  A: number,
  clipLow: number,
  clipHigh: number,
): { loss: number; dlogp: number; clipped: boolean } {
  const ratio = Math.exp(x);
  const weight = Math.min(Math.max(ratio, 1 - clipLow), 1 + clipHigh);
  return { loss: 0 - weight * A * lp, dlogp: 0 - weight * A, clipped: weight !== ratio };
}

/**
 * The per-token policy loss of shared/spec/samples.md, with the behaviour correction applied once.
 * `lp` is the trainer's logprob (the gradient is taken with respect to it), `old` its own pre-update
 * logprob (the proximal policy; equal to `lp` on the first update of a batch), `mu` the rollout logprob
 * (unknown when NaN or at vLLM's −9999 floor), `A` the advantage.
 * - decoupled (`tis_cap` = C): r = exp(lp − old), ℓ = PPO-clip(r, A) · min(exp(clamp20(old − μ)), C),
 *   the weight detached and 1 where μ is unknown;
 * - bypass (`tis_cap` = null): r = exp(clamp20(lp − μ)) where μ is known, else exp(lp − old); no weight.
 * A clamped log-ratio gives no gradient. With `policy_loss` 'cispo' the loss of the same ratio r is
 * CISPO's (cispoFromLogRatio; dual_clip ignored, as verl does): ℓ = −clip(r, 1−ε_low, 1+ε_high)·A·lp · w,
 * dℓ/dlp = −clip(r)·A·w on every token, a clamped one included (the weight is detached).
 */
export function policyTokenLoss(
  lp: number,
  old: number,
  mu: number,
  A: number,
  cfg: TokenLossConfig,
): TokenLoss {
  const known = knownLogprob(mu);
  const decoupled = cfg.tis_cap !== null;
  const raw = decoupled || !known ? lp - old : lp - mu;
  const x = decoupled || !known ? raw : clamp20(raw);
  const tisWeight = decoupled && known ? truncatedIsWeight(old, mu, cfg.tis_cap!) : 1;
  if (cfg.policy_loss === 'cispo') {
    const { loss, dlogp, clipped } = cispoFromLogRatio(x, lp, A, cfg.clip_low, cfg.clip_high);
    return { loss: loss * tisWeight, dlogp: dlogp * tisWeight, clipped, tisWeight, logRatio: x };
  }
  const ppo = ppoFromLogRatio(x, A, cfg.clip_low, cfg.clip_high, cfg.dual_clip ?? null);
  const dlogp = x === raw ? ppo.dlogp : 0;
  return {
    loss: ppo.loss * tisWeight,
    dlogp: dlogp * tisWeight,
    clipped: ppo.clipped,
    tisWeight,
    logRatio: x,
  };
}

/** A token's log-ratio d_t (as policyTokenLoss takes it) and ∂d_t/∂lp_t (0 where clamp20 cut it). */
export function tokenLogRatio(
  lp: number,
  old: number,
  mu: number,
  cfg: TokenLossConfig,
): { d: number; slope: number } {
  const known = knownLogprob(mu);
  if (cfg.tis_cap !== null || !known) return { d: lp - old, slope: 1 };
  const raw = lp - mu;
  const d = clamp20(raw);
  return { d, slope: d === raw ? 1 : 0 };
}

/**
 * The policy loss of one sequence's tokens (a training sample's mask-1 tokens with a non-zero weight),
 * arrays of equal length with the meaning of policyTokenLoss's arguments. With `policy_ratio` 'token'
 * (or absent) it is policyTokenLoss per token. With 'sequence' (GSPO, Zheng et al. 2025):
 *   d_t = the token's log-ratio as in token mode (decoupled: lp_t − old_t; bypass: clamp20(lp_t − μ_t)
 *         where μ_t is known, else lp_t − old_t),
 *   log s = mean_t d_t (detached),  x_t = lp_t − sg(lp_t) + log s  (value log s, gradient through lp_t),
 *   ℓ_t = PPO-clip(exp(x_t), A_t) (clip and dual clip as in token mode, on s) · w_t (decoupled's TIS
 *         weight, 1 in bypass or where μ_t is unknown),
 *   dℓ_t/dlp_t = −s · A_t · w_t unless clipped (0 also where clamp20 cut d_t, as in token mode).
 * With loss_agg seq-mean-token-mean this is GSPO's objective and gradient ("GSPO-token" with a
 * sequence-constant advantage). A clipped token is one of a clipped sequence. `logRatio` stays each
 * token's own d_t (the step's k3 KL figure).
 */
export function policySequenceLoss(
  lp: ArrayLike<number>,
  old: ArrayLike<number>,
  mu: ArrayLike<number>,
  A: ArrayLike<number>,
  cfg: TokenLossConfig,
): TokenLoss[] {
  const n = lp.length;
  if (old.length !== n || mu.length !== n || A.length !== n)
    throw new RangeError(`policySequenceLoss: lengths differ (lp ${n}, old ${old.length}, mu ${mu.length})`);
  const out: TokenLoss[] = [];
  if ((cfg.policy_ratio ?? 'token') === 'token') {
    // policyTokenLoss reads policy_loss (PPO-clip or CISPO)
    for (let t = 0; t < n; t++) out.push(policyTokenLoss(lp[t], old[t], mu[t], A[t], cfg));
    return out;
  }
  if (cfg.policy_loss === 'cispo')
    throw new RangeError(
      'policySequenceLoss: policy_loss cispo takes the token ratio, not policy_ratio sequence',
    );
  const ratios = Array.from(lp, (l, t) => tokenLogRatio(l, old[t], mu[t], cfg));
  let logS = 0;
  for (const r of ratios) logS += r.d;
  logS /= Math.max(n, 1);
  const decoupled = cfg.tis_cap !== null;
  for (let t = 0; t < n; t++) {
    const ppo = ppoFromLogRatio(logS, A[t], cfg.clip_low, cfg.clip_high, cfg.dual_clip ?? null);
    const tisWeight = decoupled && knownLogprob(mu[t]) ? truncatedIsWeight(old[t], mu[t], cfg.tis_cap!) : 1;
    out.push({
      loss: ppo.loss * tisWeight,
      dlogp: ratios[t].slope === 0 ? 0 : ppo.dlogp * tisWeight,
      clipped: ppo.clipped,
      tisWeight,
      logRatio: ratios[t].d,
    });
  }
  return out;
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
