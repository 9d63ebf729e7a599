// What the scheduler hands a trainer (reference engine or a GPU trainer node) and gets back.
import { z } from 'zod';
import { type AlgorithmConfig, PolicyLoss, PolicyRatio } from './algorithm';
import { SampleJson } from './samples';

/**
 * One training sample in memory: typed arrays of equal length (the samples stage builds these,
 * trainers consume them). `old_logprobs` is NaN where unknown (prompt tokens, or no rollout logprobs).
 */
export interface Sample {
  rollout_id: string;
  group_id: string;
  index: number;
  input_ids: Int32Array;
  loss_mask: Uint8Array;
  advantages: Float32Array;
  old_logprobs: Float64Array;
  loss_weights: Float64Array;
  /** Sampling temperature of the calls behind this sample (absent = 1); trainers divide logits by it. */
  temperature?: number;
}

export const PolicyLossConfig = z.object({
  clip_low: z.number().nonnegative(),
  clip_high: z.number().nonnegative(),
  tis_cap: z.number().positive().nullable(),
  dual_clip: z
    .number()
    .gt(1)
    .nullable()
    .optional()
    .describe('dual-clip PPO cap c for A < 0; absent/null = off'),
  policy_ratio: PolicyRatio.optional().describe(
    "token (absent) or sequence: GSPO's ratio exp(mean token log-ratio) per sample (algorithm.policy_ratio)",
  ),
  policy_loss: PolicyLoss.optional().describe(
    'ppo (absent) or cispo: −sg(clip(r, 1 − clip_low, 1 + clip_high))·A·logprob per token, dual_clip ignored (algorithm.policy_loss)',
  ),
  kl_coef: z.number().nonnegative(),
  learning_rate: z.number().positive(),
});

export type PolicyLossConfig = z.infer<typeof PolicyLossConfig>;

/** The loss settings a run's trainer gets: each field of PolicyLossConfig, from the run's algorithm. */
export function policyLossOf(a: AlgorithmConfig): PolicyLossConfig {
  const { clip_low, clip_high, tis_cap, dual_clip, policy_ratio, policy_loss, kl_coef, learning_rate } = a;
  return { clip_low, clip_high, tis_cap, dual_clip, policy_ratio, policy_loss, kl_coef, learning_rate };
}

/** A batch on the wire (node agents); in-process trainers take `TrainBatch` with typed samples. */
export const TrainBatchJson = z.object({
  run_id: z.string(),
  step: z.number().int().nonnegative(),
  model_version: z.number().int().nonnegative().describe('version the batch was sampled with (oldest)'),
  loss: PolicyLossConfig,
  samples: z.array(SampleJson),
});

/**
 * Train/inference agreement of one step (spec/samples.md, "Each step reports"), over mask tokens whose
 * rollout logprob mu is known; null when the batch has none. Thresholds in the run's `validation:`
 * block are checked against these names.
 */
export const StepValidation = z.object({
  tokens: z.number().int().nonnegative().describe('mask tokens with a known rollout logprob'),
  logprob_diff_mean: z.number().describe('mean |old - mu|'),
  logprob_diff_max: z.number().describe('max |old - mu|'),
  prob_correlation: z
    .number()
    .nullable()
    .describe('Pearson correlation of exp(old) and exp(mu); null when constant'),
  tis_weight_mean: z.number().describe('mean min(exp(old - mu), tis_cap); 1 in bypass mode'),
  tis_capped_fraction: z.number().describe('share of tokens whose TIS weight hit the cap'),
  scatter: z
    .array(z.tuple([z.number(), z.number()]))
    .max(512)
    .describe(
      'up to 512 (rollout prob, trainer prob) pairs, a deterministic subsample, for the scatter plot',
    ),
});

export const TrainResult = z.object({
  model_version: z.number().int().nonnegative().describe('the new weight version after this step'),
  loss: z.number(),
  clip_fraction: z.number(),
  kl: z.number().describe('approx KL(old || new) over mask tokens'),
  entropy: z.number(),
  tokens: z.number().int().nonnegative(),
  seconds: z.number().nonnegative(),
  checkpoint: z.string().nullable(),
  validation: StepValidation.nullable().optional(),
});

export interface TrainBatch {
  run_id: string;
  step: number;
  model_version: number;
  loss: z.infer<typeof PolicyLossConfig>;
  samples: Sample[];
}

export type TrainResult = z.infer<typeof TrainResult>;
export type StepValidation = z.infer<typeof StepValidation>;

/** Anything that takes a batch and updates the weights the inference side serves. */
export interface Trainer {
  train(batch: TrainBatch): Promise<TrainResult>;
  close?(): Promise<void>;
}
