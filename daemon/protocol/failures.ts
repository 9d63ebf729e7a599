// Why an attempt failed, as one kind and one reason: the single classification the store, the workers
// (the daemon's own, `harness-rl worker`, Ray), the step metrics and the views share. Infrastructure
// failures are retried within `harness.infrastructure_retries` and never count as a reward; harness
// failures use up `harness.max_attempts`.
import { z } from 'zod';

/** infrastructure: the attempt says nothing about the policy (retry it); harness: the harness failed. */
export const FailureKind = z.enum(['infrastructure', 'harness']);

/** Reasons an attempt fails for the infrastructure's sake. */
export const InfrastructureReason = z.enum([
  'sandbox_start', // the sandbox (bubblewrap, container) around the harness could not start
  'worker_lost', // no heartbeat: the worker, its machine or the network to it went away
  'node_lost', // the node that ran the worker went away (a Ray node died)
  'backend_error', // the attempt's last llm call failed at the inference backend (5xx, 429, unreachable)
  'deadline', // the harness (or verifier) was killed at harness.timeout_s
  'worker_stopped', // the worker stopped (shut down) while the attempt ran
  'harness_crashed', // a persistent harness process died while it held the attempt (it is restarted)
  'reported', // the harness said so itself: exit code 75 (EX_TEMPFAIL), or InfrastructureError
]);

/** Reasons an attempt fails for the harness's own sake. */
export const HarnessReason = z.enum([
  'exit', // the harness command exited nonzero (or could not be started)
  'no_reward', // it finished without giving or posting a reward
  'verifier', // the verifier failed or gave no finite reward
  'error', // anything else the harness (an SDK rollout function) threw
]);

export const FailureReason = z.enum([...InfrastructureReason.options, ...HarnessReason.options]);

export const AttemptFailure = z
  .object({ kind: FailureKind, reason: FailureReason })
  .strict()
  .superRefine((f, ctx) => {
    const infra = (InfrastructureReason.options as readonly string[]).includes(f.reason);
    if (infra !== (f.kind === 'infrastructure'))
      ctx.addIssue({
        code: 'custom',
        path: ['reason'],
        message: `reason ${f.reason} is a${infra ? 'n infrastructure' : ' harness'} reason, not ${f.kind}`,
      });
  })
  .describe('why an attempt (and, for its last attempt, a rollout) failed');

export type FailureKind = z.infer<typeof FailureKind>;
export type FailureReason = z.infer<typeof FailureReason>;
export type InfrastructureReason = z.infer<typeof InfrastructureReason>;
export type HarnessReason = z.infer<typeof HarnessReason>;
export type AttemptFailure = z.infer<typeof AttemptFailure>;

export const infrastructure = (reason: InfrastructureReason): AttemptFailure => ({
  kind: 'infrastructure',
  reason,
});
export const harnessFailure = (reason: HarnessReason): AttemptFailure => ({ kind: 'harness', reason });

/** The kind a reason belongs to. */
export function kindOf(reason: FailureReason): FailureKind {
  return (InfrastructureReason.options as readonly string[]).includes(reason) ? 'infrastructure' : 'harness';
}

/**
 * The failure an attempt ended with when its ender named none: a timeout is the deadline, a lost
 * heartbeat a lost worker, any other failure the harness's; success and cancellation are no failure.
 */
export function defaultFailure(status: string): AttemptFailure | null {
  if (status === 'timed_out') return infrastructure('deadline');
  if (status === 'unresponsive') return infrastructure('worker_lost');
  if (status === 'failed') return harnessFailure('error');
  return null;
}

/** sysexits.h EX_TEMPFAIL: a harness that exits with it failed for the infrastructure's sake. */
export const EXIT_TEMPFAIL = 75;

/**
 * Whether a recorded llm call failed at the inference backend rather than for its request: a 5xx, a
 * 429, or no answer at all (http_status null). A 4xx is the request's own fault (the harness's or the
 * model's, e.g. a prompt over the context length).
 */
export function backendFailed(call: { status: string; http_status: number | null }): boolean {
  if (call.status !== 'error') return false;
  return call.http_status === null || call.http_status >= 500 || call.http_status === 429;
}

/** An error that says why its attempt failed (a rollout function may throw one). */
export class AttemptFailedError extends Error {
  constructor(
    message: string,
    readonly failure: AttemptFailure,
  ) {
    super(message);
    this.name = 'AttemptFailedError';
  }
}

/** An SDK rollout function throws this for a failure that is not the harness's (retried, never a reward). */
export class InfrastructureError extends AttemptFailedError {
  constructor(message: string, reason: InfrastructureReason = 'reported') {
    super(message, infrastructure(reason));
    this.name = 'InfrastructureError';
  }
}

/** The failure an error carries (its `failure` field, when that is an AttemptFailure), else null. */
export function failureOfError(err: unknown): AttemptFailure | null {
  const parsed = AttemptFailure.safeParse((err as { failure?: unknown } | null)?.failure);
  return parsed.success ? parsed.data : null;
}
