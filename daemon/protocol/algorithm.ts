// A run's algorithm section: how samples are merged and weighted, the loss, and how rollouts sample.
import { z } from 'zod';

export const MergeMode = z.enum(['exact', 'none']);
export const AdvantageEstimator = z.enum(['grpo', 'drgrpo', 'rloo', 'reinforce']);
export const LossAggregation = z.enum([
  'token-mean',
  'seq-mean-token-mean',
  'seq-mean-token-sum',
  'seq-mean-token-sum-norm',
]);

/** The PPO ratio per token (the spec) or per sequence (GSPO); see AlgorithmConfig.policy_ratio. */
export const PolicyRatio = z.enum(['token', 'sequence']);

/** The policy loss: PPO-clip (the spec) or CISPO's clipped IS weight; see AlgorithmConfig.policy_loss. */
export const PolicyLoss = z.enum(['ppo', 'cispo']);

/**
 * A training call that constrains decoding: `record` forwards it and keeps its response tokens out of
 * the loss (their logprobs are not the policy's); `refuse` answers 400 naming the field.
 */
export const ConstrainedMode = z.enum(['record', 'refuse']);
export type ConstrainedMode = z.infer<typeof ConstrainedMode>;

/**
 * How a run's rollouts sample. vLLM returns the logprobs of the raw distribution (logprobs_mode
 * "raw_logprobs", vllm/config/model.py:305), so only neutral values (T = 1, no truncation, no
 * penalties) sample from the distribution the recorded logprobs describe; the proxy sends these on
 * every training call, whatever the harness asked for. Anything else needs vLLM started with
 * `--logprobs-mode processed_logprobs` (then a T other than 1 divides the trainer's logits): the node
 * agent starts it so, and a run refuses at start a node whose vLLM lacks it (cluster/run-backends.ts).
 */
export const SamplingConfig = z
  .object({
    temperature: z.number().positive().optional().describe('default 1'),
    top_p: z.number().gt(0).max(1).optional().describe('default 1 (no nucleus truncation)'),
    top_k: z.number().int().min(-1).optional().describe('default 0 (no top-k truncation; -1 means the same)'),
    min_p: z.number().min(0).max(1).optional().describe('default 0'),
    repetition_penalty: z.number().positive().optional().describe('default 1'),
    presence_penalty: z.number().min(-2).max(2).optional().describe('default 0'),
    frequency_penalty: z.number().min(-2).max(2).optional().describe('default 0'),
    constrained: ConstrainedMode.optional().describe(
      "what a rollout's call that constrains decoding gets (logit_bias, min_tokens, structured output, a forced tool choice …): record (default) forwards it, names the fields on the call's record and keeps its response tokens out of the loss; refuse answers 400 naming the field",
    ),
  })
  .strict();

/** The neutral sampling parameters: the distribution vLLM's raw logprobs describe. */
export const NEUTRAL_SAMPLING = {
  temperature: 1,
  top_p: 1,
  top_k: 0,
  min_p: 0,
  repetition_penalty: 1,
  presence_penalty: 0,
  frequency_penalty: 0,
} as const;

export type RunSampling = { -readonly [K in keyof typeof NEUTRAL_SAMPLING]: number };

/** The sampling a run's rollouts use: its `algorithm.sampling`, neutral where unset. */
export function runSampling(algorithm: {
  sampling?: z.infer<typeof SamplingConfig>;
  temperature?: number;
}): RunSampling {
  const s = algorithm.sampling ?? {};
  return {
    temperature: s.temperature ?? algorithm.temperature ?? NEUTRAL_SAMPLING.temperature,
    top_p: s.top_p ?? NEUTRAL_SAMPLING.top_p,
    top_k: s.top_k ?? NEUTRAL_SAMPLING.top_k,
    min_p: s.min_p ?? NEUTRAL_SAMPLING.min_p,
    repetition_penalty: s.repetition_penalty ?? NEUTRAL_SAMPLING.repetition_penalty,
    presence_penalty: s.presence_penalty ?? NEUTRAL_SAMPLING.presence_penalty,
    frequency_penalty: s.frequency_penalty ?? NEUTRAL_SAMPLING.frequency_penalty,
  };
}

export const AlgorithmConfig = z
  .object({
    n: z.number().int().positive().default(8).describe('rollouts per group'),
    merge: MergeMode.default('exact'),
    tito: z.boolean().default(true).describe('token-in-token-out bridge for harnesses that resend text'),
    advantage: AdvantageEstimator.default('grpo'),
    loss_agg: LossAggregation.default('token-mean'),
    clip_low: z.number().nonnegative().default(0.2),
    clip_high: z.number().nonnegative().default(0.28),
    tis_cap: z
      .number()
      .positive()
      .nullable()
      .default(2)
      .describe(
        "decoupled PPO's truncated importance-sampling cap C (ratio against the trainer's own logprob, weight min(π/μ, C)); null = bypass (ratio against the rollout logprob, no weight)",
      ),
    dual_clip: z
      .number()
      .gt(1)
      .nullable()
      .default(null)
      .describe('dual-clip PPO: for negative advantages the loss is capped at −c·A (c > 1), null = off'),
    policy_ratio: PolicyRatio.default('token').describe(
      "the PPO ratio: token = each token's own (shared/spec/samples.md); sequence = GSPO (Zheng et al. 2025): each training sample's tokens use s = exp(mean of their token log-ratios), clipped on s, the gradient through each token's logprob; with loss_agg seq-mean-token-mean it is GSPO's objective. The GSPO paper clips far tighter (clip_low 3e-4, clip_high 4e-4) than the token defaults",
    ),
    policy_loss: PolicyLoss.default('ppo').describe(
      "ppo = PPO-clip (shared/spec/samples.md); cispo = CISPO (MiniMax-M1, arXiv:2506.13585; verl's loss_mode cispo): each token's loss is −sg(clip(r, 1 − clip_low, 1 + clip_high))·A·logprob, so a token whose ratio is out of range keeps a gradient (its weight clipped) instead of losing it; r, tis_cap and the KL as with ppo; not with dual_clip or policy_ratio sequence. MiniMax tunes only the upper bound and leaves the lower one off (a large clip_low, e.g. verl's example: clip_low 10, clip_high 0.2)",
    ),
    learning_rate: z.number().positive().default(1e-6),
    kl_coef: z.number().nonnegative().default(0),
    max_prompt_tokens: z.number().int().positive().default(8192),
    max_response_tokens: z.number().int().positive().default(4096),
    max_len: z.number().int().positive().optional().describe('constant for seq-mean-token-sum-norm'),
    temperature: z
      .number()
      .positive()
      .optional()
      .describe('the same as sampling.temperature (kept for run configs written before sampling existed)'),
    sampling: SamplingConfig.optional().describe(
      "how rollouts sample; the proxy sends these values (neutral where unset) on every call of the run's rollouts, replacing the harness's own",
    ),
    drop_zero_variance_groups: z.boolean().default(false),
    incomplete_groups: z
      .enum(['train', 'drop'])
      .default('train')
      .describe(
        'a group with rollouts that failed after all their attempts: train on the rollouts that finished, or drop the group',
      ),
  })
  .strict()
  .superRefine((a, ctx) => {
    if (a.policy_loss === 'cispo') {
      const why = (field: string, what: string) =>
        ctx.addIssue({
          code: 'custom',
          path: [field],
          message: `${what} does not apply to policy_loss cispo`,
        });
      if (a.dual_clip !== null)
        why('dual_clip', `dual_clip ${a.dual_clip} (a cap on PPO-clip's loss for A < 0)`);
      if (a.policy_ratio !== 'token')
        why('policy_ratio', `policy_ratio ${a.policy_ratio} (GSPO's sequence ratio, clipped PPO-style)`);
    }
    const t = a.sampling?.temperature;
    if (a.temperature !== undefined && t !== undefined && t !== a.temperature)
      ctx.addIssue({
        code: 'custom',
        path: ['temperature'],
        message: `temperature ${a.temperature} contradicts sampling.temperature ${t}: set one of them`,
      });
  });

export type AlgorithmConfig = z.infer<typeof AlgorithmConfig>;
export type SamplingConfig = z.infer<typeof SamplingConfig>;
export type MergeMode = z.infer<typeof MergeMode>;
export type AdvantageEstimator = z.infer<typeof AdvantageEstimator>;
export type LossAggregation = z.infer<typeof LossAggregation>;
export type PolicyRatio = z.infer<typeof PolicyRatio>;
export type PolicyLoss = z.infer<typeof PolicyLoss>;
