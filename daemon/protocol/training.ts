// What the scheduler hands a trainer (reference engine or a GPU trainer node) and gets back.
import { z } from 'zod';
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
  kl_coef: z.number().nonnegative(),
  learning_rate: z.number().positive(),
});

/** A batch on the wire (node agents); in-process trainers take `TrainBatch` with typed samples. */
export const TrainBatchJson = z.object({
  run_id: z.string(),
  step: z.number().int().nonnegative(),
  model_version: z.number().int().nonnegative().describe('version the batch was sampled with (oldest)'),
  loss: PolicyLossConfig,
  samples: z.array(SampleJson),
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
});

export interface TrainBatch {
  run_id: string;
  step: number;
  model_version: number;
  loss: z.infer<typeof PolicyLossConfig>;
  samples: Sample[];
}

export type PolicyLossConfig = z.infer<typeof PolicyLossConfig>;
export type TrainResult = z.infer<typeof TrainResult>;

/** Anything that takes a batch and updates the weights the inference side serves. */
export interface Trainer {
  train(batch: TrainBatch): Promise<TrainResult>;
  close?(): Promise<void>;
}
