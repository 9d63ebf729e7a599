// The samples contract (../shared/spec/samples.md): trajectories in, training samples out.
import { z } from 'zod';
import { Id, Logprobs, TokenIds } from './entities';

export const TrajectoryCall = z
  .object({
    prompt_ids: TokenIds,
    response_ids: TokenIds,
    response_logprobs: Logprobs.nullish(),
    temperature: z
      .number()
      .positive()
      .nullish()
      .describe(
        'the temperature the call sampled at (absent: not known); calls at different temperatures are not merged',
      ),
    constrained: z
      .array(z.string())
      .nullish()
      .describe(
        'the request fields that constrained its decoding (LlmCall.sampling.constrained): its response tokens are context (mask 0), not trained on',
      ),
  })
  .strict();

export const Trajectory = z
  .object({
    rollout_id: Id,
    group_id: Id,
    reward: z.number().finite().nullable(),
    calls: z.array(TrajectoryCall),
  })
  .strict();

/** One training sample as JSON (the offline CLI's output line, `harness-rl export`). */
export const SampleJson = z.object({
  rollout_id: Id,
  group_id: Id,
  index: z.number().int().nonnegative(),
  input_ids: TokenIds,
  loss_mask: z.array(z.union([z.literal(0), z.literal(1)])),
  advantages: z.array(z.number()),
  old_logprobs: z.array(z.number().nullable()),
  loss_weights: z.array(z.number()),
  temperature: z
    .number()
    .positive()
    .optional()
    .describe(
      'sampling temperature the rollout logprobs were taken at; the trainer divides its logits by it (absent = 1)',
    ),
});

export const SamplesSummary = z.object({
  trajectories: z.number().int(),
  samples: z.number().int(),
  prefix_breaks: z.number().int(),
  excluded: z.number().int(),
  mask_tokens: z.number().int(),
});

export type TrajectoryCall = z.infer<typeof TrajectoryCall>;
export type Trajectory = z.infer<typeof Trajectory>;
export type SampleJson = z.infer<typeof SampleJson>;
export type SamplesSummary = z.infer<typeof SamplesSummary>;
