// A step's metrics as the run stores them (the dashboard's charts): rewards, rollouts, the samples
// stage's summary, the trainer's result and validation, staleness and throughput.
import type { Rollout } from '../protocol/entities';
import type { TrainResult } from '../protocol/training';
import { type BuildResult, excludedCallMetrics } from '../samples';
import { validationMetrics } from './validation-gate';

/** What one step measured, before its metrics are assembled. */
export interface StepFigures {
  rollouts: Rollout[];
  built: BuildResult;
  /** Mean and standard deviation of the succeeded rollouts' rewards. */
  rewards: { mean: number | null; std: number | null };
  /** The trainer's answer; null when the step had no samples to train on. */
  result: TrainResult | null;
  /** The model version the step started at, and the oldest version that served one of its calls. */
  version: number;
  oldest: number;
  /** From the batch's start to the last rollout finished. */
  sampleSeconds: number;
  responseTokens: number;
  /** The trainer node's own figures (memory, its step time), when it trained. */
  trainerMetrics?: Record<string, number | null>;
}

/** The step's metrics; `seconds` (the whole step) is filled in when the step ends. */
export function stepMetrics(f: StepFigures): Record<string, number | null> {
  const { rollouts, built, result, sampleSeconds } = f;
  const finished = rollouts.filter((r) => r.status === 'succeeded');
  return {
    mean_reward: f.rewards.mean,
    reward_std: f.rewards.std,
    rollouts: rollouts.length,
    failed_rollouts: rollouts.filter((r) => r.status === 'failed').length,
    samples: built.samples.length,
    prefix_breaks: built.summary.prefix_breaks,
    temperature_breaks: built.summary.temperature_breaks,
    mask_tokens: built.summary.mask_tokens,
    zero_variance_groups: built.summary.zero_variance_groups,
    dropped_groups: built.summary.dropped_groups,
    ...excludedCallMetrics(built.summary.excluded_calls),
    loss: result?.loss ?? null,
    kl: result?.kl ?? null,
    entropy: result?.entropy ?? null,
    clip_fraction: result?.clip_fraction ?? null,
    ...validationMetrics(result ? result.validation : undefined),
    staleness: f.version - f.oldest,
    tokens_per_s: sampleSeconds > 0 ? f.responseTokens / sampleSeconds : null,
    train_tokens_per_s: result && result.seconds > 0 ? result.tokens / result.seconds : null,
    rollouts_per_s: sampleSeconds > 0 ? finished.length / sampleSeconds : null,
    train_seconds: result?.seconds ?? null,
    seconds: null,
    ...(result ? f.trainerMetrics : {}),
  };
}
