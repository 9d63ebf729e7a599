// The worker protocol: the bodies and answers of the claim / heartbeat / output / finish routes, shared
// by the daemon's routes (api/workers.ts validates and documents with them) and the SDK worker.
import { z } from 'zod';
import { durationS, storedText } from './bounds';
import { Attempt, Id, Json, Rollout } from './entities';
import { AttemptFailure } from './failures';
import { HarnessSandbox } from './placement';

export const ClaimBody = z
  .object({
    worker: storedText().max(200).optional().describe('a name for the worker, stored on the attempt'),
    wait_ms: z
      .number()
      .int()
      .min(0)
      .max(30_000)
      .default(0)
      .describe('wait up to this long for a queued rollout before answering 204'),
  })
  .strict();

export const Claimed = z.object({
  rollout: Rollout,
  attempt: Attempt,
  key: z.string().describe('bearer key scoped to this rollout (OPENAI_API_KEY / ANTHROPIC_API_KEY)'),
  openai_base_url: z.string(),
  anthropic_base_url: z.string(),
  input: Json.describe('the task input'),
  model: z.string().describe('the served model name to ask for'),
  timeout_s: durationS().describe('the attempt is timed out after this long'),
  heartbeat_s: durationS().describe('post a heartbeat at least this often'),
  reward: z
    .enum(['harness', 'verifier'])
    .optional()
    .describe("the run's harness.reward: with 'verifier' the worker runs `verifier` after the harness"),
  verifier: z.array(z.string()).optional().describe("the run's harness.verifier argv (reward: verifier)"),
  command: z.array(z.string()).optional().describe("the run's harness.command (what a Ray worker runs)"),
  sandbox: HarnessSandbox.optional().describe("the run's harness.sandbox: where the worker runs the command"),
  mode: z
    .enum(['spawn', 'persistent'])
    .optional()
    .describe(
      "the run's harness.mode: persistent, the worker starts `command` once per concurrency slot and writes it the rollout on stdin (protocol/persistent.ts)",
    ),
});

export const HeartbeatBody = z.object({ rollout_id: Id.optional() }).strict();
export const HeartbeatReply = z.object({
  status: z.string().describe('the attempt status'),
  cancel: z.boolean().describe('true when the attempt is over (cancelled, timed out…): stop the harness'),
});

export const FinishBody = z
  .object({
    status: z.enum(['succeeded', 'failed', 'timed_out', 'cancelled']),
    error: storedText().max(10_000).optional(),
    failure: AttemptFailure.optional().describe(
      'why it failed (absent: timed_out is infrastructure/deadline, failed is harness/error)',
    ),
    reward: z
      .number()
      .finite()
      .optional()
      .describe(
        "stored unless the harness already posted one; a 'verifier' reward is always stored and counts",
      ),
    reward_source: z
      .enum(['harness', 'verifier'])
      .default('harness')
      .describe("who computed `reward`; a run with harness.reward 'verifier' needs 'verifier' to succeed"),
    reward_detail: Json.optional().describe('stored with the reward (e.g. the verifier’s test results)'),
    rollout_id: Id.optional().describe(
      'the attempt’s rollout (known to the daemon when it issued the claim)',
    ),
  })
  .strict();

export const OutputBody = z
  .object({
    rollout_id: Id.optional(),
    chunk: z.string().max(1_000_000).describe("more of the attempt's stdout and stderr, as it came"),
  })
  .strict();

export const OutputReply = z.object({ ok: z.literal(true) });

export const FinishReply = z.object({ rollout: Rollout.describe('the rollout after its attempt ended') });

export type ClaimBody = z.input<typeof ClaimBody>;
export type Claimed = z.infer<typeof Claimed>;
export type HeartbeatReply = z.infer<typeof HeartbeatReply>;
export type FinishBody = z.infer<typeof FinishBody>;

/** What a harness run by the worker gets (the claimed rollout) and gives back. */
export interface RolloutContext extends Claimed {
  /** Aborted when the attempt is over (cancelled, timed out) or the worker stops: stop the harness. */
  signal: AbortSignal;
  daemonUrl: string;
}

export interface RolloutOutcome {
  /** The reward; leave it out when the harness posted it itself. With a verifier it does not count. */
  reward?: number;
  /** The harness's stdout, for the verifier. */
  stdout?: string;
  /** The harness's final answer, for the verifier (default: the text of its last llm call's response). */
  output?: string;
}
