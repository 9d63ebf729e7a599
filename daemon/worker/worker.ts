// The SDK worker loop: claim a rollout of a run, keep its attempt alive with heartbeats, run the
// harness on it, run the verifier when the run rewards by verifier, post the reward and finish the
// attempt. `harness-rl worker` and the demo use it.
import { hostname } from 'node:os';
import { WORKER_KEY_PREFIX } from '../api/auth';
import { readReply, restFetch } from '../api/rest-call';
import { errorText } from '../error-text';
import { type RolloutDetail, RolloutDetail as RolloutDetailSchema } from '../protocol/api';
import {
  AttemptFailedError,
  type AttemptFailure,
  failureOfError,
  harnessFailure,
  infrastructure,
} from '../protocol/failures';
import {
  type Claimed,
  Claimed as ClaimedSchema,
  HeartbeatReply,
  type RolloutContext,
  type RolloutOutcome,
} from '../protocol/worker';
import { noRewardText } from './command';
import { commandVerifier, finalOutput, type Verdict, type Verifier, type VerifierInput } from './verifier';
import { sleep } from './wait';

export { AttemptFailedError, InfrastructureError } from '../protocol/failures';
export type { RolloutContext, RolloutOutcome } from '../protocol/worker';

export interface WorkerOptions {
  daemonUrl: string;
  token: string;
  runId: string;
  concurrency: number;
  rollout: (ctx: RolloutContext) => Promise<RolloutOutcome | undefined>;
  /** Stops claiming and aborts running rollouts. */
  signal?: AbortSignal;
  /** Name stored on each attempt (default host:pid). */
  worker?: string;
  /** How long one claim waits for a queued rollout (ms, default 2000). */
  waitMs?: number;
  /**
   * Computes the reward after a rollout succeeded (source 'verifier'). Default: for a run with
   * `harness.reward: verifier`, its `harness.verifier` command (run in `cwd`).
   */
  verify?: Verifier;
  /** The folder the run's verifier command runs in (default the process's). */
  cwd?: string;
  log?: (message: string) => void;
}

export interface WorkerSummary {
  succeeded: number;
  failed: number;
  timed_out: number;
  cancelled: number;
}

export class DaemonHttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

async function post(
  options: Pick<WorkerOptions, 'daemonUrl' | 'token'>,
  path: string,
  body: unknown,
  signal?: AbortSignal,
): Promise<{ status: number; json: unknown }> {
  return call(options, 'POST', path, body, signal);
}

async function call(
  options: Pick<WorkerOptions, 'daemonUrl' | 'token'>,
  method: 'GET' | 'POST',
  path: string,
  body: unknown,
  signal?: AbortSignal,
): Promise<{ status: number; json: unknown }> {
  const response = await restFetch(
    `${options.daemonUrl.replace(/\/$/, '')}${path}`,
    method,
    options.token,
    body,
    signal,
  );
  const reply = await readReply(response);
  const text = reply.text;
  // A body that is not JSON is kept as its text (for the error message and the caller's schema).
  const json = reply.json ?? (text || null);
  if (response.status >= 400) {
    const message =
      (json as { error?: { message?: string } } | null)?.error?.message ?? `HTTP ${response.status} ${text}`;
    throw new DaemonHttpError(response.status, message);
  }
  return { status: response.status, json };
}

/** Why an attempt that threw failed: how it was aborted, else what the error says, else by phase. */
function attemptFailure(
  outcome: 'timed_out' | 'verifier_timed_out' | 'cancelled' | 'stopped' | null,
  phase: 'harness' | 'verifier',
  err: unknown,
): AttemptFailure | undefined {
  if (outcome === 'timed_out' || outcome === 'verifier_timed_out') return infrastructure('deadline');
  if (outcome === 'stopped') return infrastructure('worker_stopped');
  if (outcome === 'cancelled') return undefined;
  return failureOfError(err) ?? harnessFailure(phase === 'verifier' ? 'verifier' : 'error');
}

/** Run rollouts of one run until the run ends (the daemon answers 410) or `signal` aborts. */
export async function runWorker(options: WorkerOptions): Promise<WorkerSummary> {
  const summary: WorkerSummary = { succeeded: 0, failed: 0, timed_out: 0, cancelled: 0 };
  const worker = options.worker ?? `${hostname()}:${process.pid}`;
  const log = options.log ?? (() => {});
  let over = false;

  // Read with the rollout's own key: a worker holding a run's worker credential may not read rollouts.
  const readRollout = async (claim: Claimed, signal: AbortSignal): Promise<RolloutDetail> => {
    try {
      const path = `/api/rollouts/${claim.rollout.id}`;
      const { json } = await call({ ...options, token: claim.key }, 'GET', path, undefined, signal);
      return RolloutDetailSchema.parse(json);
    } catch (err) {
      throw new Error(`could not read rollout ${claim.rollout.id} back: ${errorText(err)}`);
    }
  };

  /** What the verifier of a claimed rollout is given (its llm calls read back from the daemon). */
  const verifierInput = async (
    claim: Claimed,
    result: RolloutOutcome | undefined,
    signal: AbortSignal,
  ): Promise<VerifierInput> => {
    const detail = await readRollout(claim, signal);
    return {
      run_id: claim.rollout.run_id,
      rollout_id: claim.rollout.id,
      attempt_id: claim.attempt.id,
      task: claim.input ?? null,
      output: result?.output ?? finalOutput(detail.llm_calls, claim.attempt.id),
      stdout: result?.stdout ?? '',
      harness_reward: result?.reward ?? detail.reward ?? null,
    };
  };

  const runOne = async (claim: Claimed) => {
    const attemptPath = `/api/attempts/${claim.attempt.id}`;
    const controller = new AbortController();
    let outcome: 'timed_out' | 'verifier_timed_out' | 'cancelled' | 'stopped' | null = null;
    const abort = (why: NonNullable<typeof outcome>) => {
      outcome ??= why;
      const message =
        why === 'timed_out'
          ? `timed out after ${claim.timeout_s}s`
          : why === 'verifier_timed_out'
            ? `verifier timed out after ${claim.timeout_s}s`
            : why;
      controller.abort(new Error(message));
    };
    const onStop = () => abort('stopped');
    options.signal?.addEventListener('abort', onStop, { once: true });
    let timeout = setTimeout(() => abort('timed_out'), claim.timeout_s * 1000);
    const heartbeat = setInterval(
      () => {
        post(options, `${attemptPath}/heartbeat`, { rollout_id: claim.rollout.id })
          .then(({ json }) => {
            if (HeartbeatReply.parse(json).cancel) abort('cancelled');
          })
          .catch((err) => {
            if (err instanceof DaemonHttpError && (err.status === 404 || err.status === 409))
              abort('cancelled');
          });
      },
      Math.max(200, claim.heartbeat_s * 1000),
    );
    let status: 'succeeded' | 'failed' | 'timed_out' | 'cancelled' = 'succeeded';
    let error: string | undefined;
    let failure: AttemptFailure | undefined;
    let reward: number | undefined;
    let verdict: Verdict | undefined;
    const verify =
      options.verify ??
      (claim.reward === 'verifier' && claim.verifier?.length
        ? commandVerifier(claim.verifier, { cwd: options.cwd })
        : undefined);
    let phase: 'harness' | 'verifier' = 'harness';
    try {
      // Race the harness (and the verifier) against the abort, so one that ignores its signal cannot
      // hold the slot.
      const aborted = new Promise<never>((_, reject) =>
        controller.signal.addEventListener('abort', () => reject(controller.signal.reason), { once: true }),
      );
      aborted.catch(() => {});
      const result = await Promise.race([
        options.rollout({ ...claim, signal: controller.signal, daemonUrl: options.daemonUrl }),
        aborted,
      ]);
      if (outcome) throw controller.signal.reason;
      reward = result?.reward ?? undefined;
      // A harness may post its reward itself; one that neither gave nor posted one fails its attempt
      // (a missing reward is never taken as 0).
      if (!verify && reward === undefined && (await readRollout(claim, controller.signal)).reward === null)
        throw new AttemptFailedError(
          noRewardText({ mode: claim.mode, rolloutId: claim.rollout.id, stdout: result?.stdout }),
          harnessFailure('no_reward'),
        );
      if (verify) {
        // The verifier gets a timeout of its own (harness.timeout_s), after the harness's.
        phase = 'verifier';
        clearTimeout(timeout);
        timeout = setTimeout(() => abort('verifier_timed_out'), claim.timeout_s * 1000);
        const input = await verifierInput(claim, result ?? undefined, controller.signal);
        verdict = await Promise.race([verify(input, controller.signal), aborted]);
        if (outcome) throw controller.signal.reason;
        if (typeof verdict?.reward !== 'number' || !Number.isFinite(verdict.reward))
          throw new Error(`gave no finite reward (${JSON.stringify(verdict?.reward)})`);
        reward = verdict.reward;
      }
    } catch (err) {
      status = outcome === 'timed_out' ? 'timed_out' : outcome === 'cancelled' ? 'cancelled' : 'failed';
      failure = attemptFailure(outcome, phase, err);
      error =
        outcome === 'stopped'
          ? 'the worker stopped'
          : phase === 'verifier' && !outcome
            ? `verifier failed: ${errorText(err)}`
            : errorText(err);
      verdict = undefined;
      reward = undefined; // a failed attempt stores no reward
    } finally {
      clearTimeout(timeout);
      clearInterval(heartbeat);
      options.signal?.removeEventListener('abort', onStop);
    }
    summary[status]++;
    log(
      `rollout ${claim.rollout.id} ${status}${reward !== undefined ? ` reward=${reward}${verdict ? ' (verifier)' : ''}` : ''}${error ? `: ${error}` : ''}`,
    );
    if (outcome === 'cancelled') return; // the daemon ended the attempt already
    try {
      await post(options, `${attemptPath}/finish`, {
        status,
        error,
        ...(failure ? { failure } : {}),
        reward,
        rollout_id: claim.rollout.id,
        ...(verdict
          ? {
              reward_source: 'verifier',
              ...(verdict.detail === undefined ? {} : { reward_detail: verdict.detail }),
            }
          : {}),
      });
    } catch (err) {
      if (!(err instanceof DaemonHttpError && err.status === 409))
        log(`finish ${claim.attempt.id}: ${errorText(err)}`);
    }
  };

  const slot = async () => {
    let backoff = 200;
    while (!over && !options.signal?.aborted) {
      let claim: Claimed | null = null;
      try {
        const { status, json } = await post(
          options,
          `/api/runs/${options.runId}/claim`,
          { worker, wait_ms: options.waitMs ?? 2000 },
          options.signal,
        );
        if (status === 200) claim = ClaimedSchema.parse(json);
        backoff = 200;
      } catch (err) {
        if (options.signal?.aborted) break;
        if (err instanceof DaemonHttpError && (err.status === 410 || err.status === 404)) {
          log(`run ${options.runId}: ${err.message}`);
          over = true;
          break;
        }
        if (err instanceof DaemonHttpError && err.status === 401) {
          over = true;
          // A run's own worker credential is revoked when the run ends: that is the end of the work,
          // not a mistake. A wrong daemon token is the caller's mistake and is thrown.
          if (options.token.startsWith(WORKER_KEY_PREFIX)) {
            log(`run ${options.runId}: ${err.message}`);
            break;
          }
          throw err;
        }
        log(`claim failed: ${errorText(err)}`);
        await sleep(backoff, options.signal);
        backoff = Math.min(backoff * 2, 5000);
        continue;
      }
      if (claim) await runOne(claim);
    }
  };

  await Promise.all(Array.from({ length: Math.max(1, options.concurrency) }, slot));
  return summary;
}
