// The reference trainer: PPO-clip (spec/samples.md) or CISPO policy loss with Adam, on the engine's own weights.
import type { PolicyLossConfig, Sample, TrainBatch, Trainer, TrainResult } from '../protocol/training';
import { klK3, policySequenceLoss, policyTokenLoss } from '../samples/loss';
import { stepValidation } from '../samples/validation';
import { initParams } from './layout';
import { Model } from './model';

/**
 * Per-token PPO-clip loss with its derivative against a given denominator `old`
 * (ℓ = −min(ratio·A, clip(ratio, 1−ε_low, 1+ε_high)·A), ratio = exp(logp − old)): policyTokenLoss of
 * samples/loss.ts with no rollout logprob. A clipped token (and one capped by the dual clip) gives no gradient.
 */
export function ppoClipTokenLossAndGrad(
  logp: number,
  old: number,
  advantage: number,
  clipLow: number,
  clipHigh: number,
  dualClip: number | null = null,
): { loss: number; dlogp: number; clipped: boolean } {
  const cfg = { clip_low: clipLow, clip_high: clipHigh, tis_cap: null, dual_clip: dualClip };
  const { loss, dlogp, clipped } = policyTokenLoss(logp, old, Number.NaN, advantage, cfg);
  return { loss, dlogp, clipped };
}

export interface AdamState {
  m: Float64Array;
  v: Float64Array;
  t: number;
}

export const ADAM = { beta1: 0.9, beta2: 0.999, eps: 1e-8, maxGradNorm: 1.0 };

/** The engine state the trainer mutates: weights, optimizer, version. */
export interface TrainableEngine {
  model: Model;
  adam: AdamState;
  version: number;
  seed: number;
  /** swap in new weights atomically (the inference side reads `model.params`) */
  commit(params: Float64Array, version: number): void;
}

interface TokenStats {
  loss: number;
  tokens: number;
  clipped: number;
  kl: number;
  entropy: number;
  /** Per mask token: the trainer's pre-update logprob and the rollout's (NaN: unknown), for stepValidation. */
  agreement?: { old: number[]; mu: number[] };
}

const emptyStats = (): TokenStats => ({ loss: 0, tokens: 0, clipped: 0, kl: 0, entropy: 0 });

const yieldNow = () => new Promise<void>((r) => setImmediate(r));

/** The sample's shape, ids, temperature and weights are usable; its trained targets (mask 1, weight ≠ 0). */
function trainedTargets(model: Model, sample: Sample): number[] {
  const n = sample.input_ids.length;
  const name = `sample ${sample.rollout_id}#${sample.index}`;
  if (
    sample.loss_mask.length !== n ||
    sample.advantages.length !== n ||
    sample.old_logprobs.length !== n ||
    sample.loss_weights.length !== n
  )
    throw new Error(
      `${name}: input_ids, loss_mask, advantages, old_logprobs and loss_weights differ in length`,
    );
  for (let t = 0; t < n; t++) {
    const id = sample.input_ids[t];
    if (!(id >= 0 && id < model.config.vocab))
      throw new Error(
        `${name}: token id ${id} at ${t} is outside the vocabulary (0..${model.config.vocab - 1})`,
      );
  }
  if (sample.temperature !== undefined && !(sample.temperature > 0 && Number.isFinite(sample.temperature)))
    throw new Error(`${name}: temperature ${sample.temperature} is not a positive number`);
  const T = Math.min(n, model.config.maxLen);
  const targets: number[] = [];
  for (let t = 1; t < T; t++) {
    if (!sample.loss_mask[t] || sample.loss_weights[t] === 0) continue;
    if (!Number.isFinite(sample.loss_weights[t]) || !Number.isFinite(sample.advantages[t]))
      throw new Error(`${name}: non-finite advantage or loss weight at ${t}`);
    targets.push(t);
  }
  return targets;
}

/**
 * Loss and gradient of one sample (accumulated into grad and stats). Exported for the gradient check.
 * The sample is one sequence of the loss: with `policy_ratio` 'sequence' (GSPO) its trained tokens share
 * the ratio exp(mean of their log-ratios) (samples/loss.ts, policySequenceLoss).
 */
export function sampleLossAndGrad(
  model: Model,
  sample: Sample,
  loss: PolicyLossConfig,
  grad: Float64Array | null,
  stats: TokenStats,
  refModel: Model | null,
  validateOnly = false,
): void {
  const targets = trainedTargets(model, sample);
  if (targets.length === 0 || validateOnly) return;
  const tokens = sample.input_ids.subarray(0, Math.min(sample.input_ids.length, model.config.maxLen));
  const positions = targets.map((t) => t - 1);
  const temperature = sample.temperature ?? 1; // the logprobs describe logits / T (spec/samples.md)
  const fw = model.forward(tokens, positions, temperature);
  const refFw = refModel && loss.kl_coef > 0 ? refModel.forward(tokens, positions, temperature) : null;
  const V = model.config.vocab;
  const dlogp = new Float64Array(positions.length * V);
  const lps = targets.map((t, k) => fw.logp[k * V + tokens[t]]);
  const mus = targets.map((t) => sample.old_logprobs[t]);
  // One optimiser step per batch: the proximal (pre-update) logprob is lp itself, detached.
  const parts = policySequenceLoss(
    lps,
    lps,
    mus,
    targets.map((t) => sample.advantages[t]),
    loss,
  );
  for (let k = 0; k < targets.length; k++) {
    const t = targets[k];
    const tok = tokens[t];
    const lp = lps[k];
    const r = parts[k];
    const w = sample.loss_weights[t];
    let tokLoss = r.loss;
    let g = r.dlogp;
    if (refFw) {
      // k3 estimator of KL(π_θ || π_ref): exp(ref − logp) − (ref − logp) − 1; d/dlogp = 1 − exp(ref − logp)
      const refLp = refFw.logp[k * V + tok];
      tokLoss += loss.kl_coef * klK3(lp, refLp);
      g += loss.kl_coef * (1 - Math.exp(refLp - lp));
    }
    dlogp[k * V + tok] = w * g;
    stats.loss += w * tokLoss;
    stats.tokens += 1;
    stats.agreement?.old.push(lp);
    stats.agreement?.mu.push(mus[k]);
    if (r.clipped) stats.clipped += 1;
    stats.kl += Math.exp(r.logRatio) - r.logRatio - 1; // k3 of KL(ratio's denominator || current)
    let ent = 0;
    for (let j = 0; j < V; j++) {
      const l = fw.logp[k * V + j];
      ent -= Math.exp(l) * l;
    }
    stats.entropy += ent;
  }
  if (grad) model.backward(fw, dlogp, grad);
}

export class ReferenceTrainer implements Trainer {
  private refModel: Model | null = null;
  constructor(
    private readonly engine: TrainableEngine,
    private readonly onStep?: (result: TrainResult) => Promise<string | null>,
  ) {}

  async train(batch: TrainBatch): Promise<TrainResult> {
    const started = performance.now();
    const e = this.engine;
    const model = e.model;
    if (batch.loss.kl_coef > 0 && !this.refModel) {
      this.refModel = new Model(model.config, initParams(model.config, e.seed));
    }
    // Work on a copy so requests served meanwhile see one consistent version.
    const working = new Model(model.config, new Float64Array(model.params));
    const grad = new Float64Array(working.params.length);
    const stats: TokenStats = { ...emptyStats(), agreement: { old: [], mu: [] } };
    // Validate everything before touching the weights: a bad batch changes nothing.
    for (const sample of batch.samples)
      sampleLossAndGrad(working, sample, batch.loss, null, emptyStats(), null, true);
    for (const sample of batch.samples) {
      sampleLossAndGrad(working, sample, batch.loss, grad, stats, this.refModel);
      await yieldNow();
    }
    if (stats.tokens > 0) adamStep(working.params, grad, e.adam, batch.loss.learning_rate);
    const version = e.version + 1;
    e.commit(working.params, version);
    const n = Math.max(stats.tokens, 1);
    const result: TrainResult = {
      model_version: version,
      loss: stats.loss,
      clip_fraction: stats.clipped / n,
      kl: stats.kl / n,
      entropy: stats.entropy / n,
      tokens: stats.tokens,
      seconds: (performance.now() - started) / 1000,
      checkpoint: null,
      validation: stepValidation(stats.agreement!.old, stats.agreement!.mu, batch.loss.tis_cap),
    };
    if (this.onStep) result.checkpoint = await this.onStep(result);
    return result;
  }
}

/** Adam with global-norm gradient clipping, in place. */
export function adamStep(params: Float64Array, grad: Float64Array, s: AdamState, lr: number): void {
  let norm = 0;
  for (let i = 0; i < grad.length; i++) norm += grad[i] * grad[i];
  norm = Math.sqrt(norm);
  const scale = norm > ADAM.maxGradNorm ? ADAM.maxGradNorm / norm : 1;
  s.t += 1;
  const { beta1: b1, beta2: b2, eps } = ADAM;
  const c1 = 1 - b1 ** s.t;
  const c2 = 1 - b2 ** s.t;
  for (let i = 0; i < params.length; i++) {
    const g = grad[i] * scale;
    s.m[i] = b1 * s.m[i] + (1 - b1) * g;
    s.v[i] = b2 * s.v[i] + (1 - b2) * g * g;
    params[i] -= (lr * (s.m[i] / c1)) / (Math.sqrt(s.v[i] / c2) + eps);
  }
}
