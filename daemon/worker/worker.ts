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

type AbortWhy = 'timed_out' | 'verifier_timed_out' | 'cancelled' | 'stopped';

/** Why an attempt that threw failed: how it was aborted, else what the error says, else by phase. */
function attemptFailure(
  outcome: AbortWhy | null,
  phase: 'harness' | 'verifier',
  err: unknown,
): AttemptFailure | undefined {
  if (outcome === 'timed_out' || outcome === 'verifier_timed_out') return infrastructure('deadline');
  if (outcome === 'stopped') return infrastructure('worker_stopped');
  if (outcome === 'cancelled') return undefined;
  return failureOfError(err) ?? harnessFailure(phase === 'verifier' ? 'verifier' : 'error');
}

/**
 * What ends a claimed attempt early: the harness's deadline (then the verifier's own), the daemon
 * answering a heartbeat with a cancel, the worker stopping. `aborted` rejects when one does, so that a
 * harness that ignores its signal cannot hold the slot.
 */
class AttemptWatch {
  private readonly controller = new AbortController();
  readonly signal = this.controller.signal;
  readonly aborted: Promise<never>;
  outcome: AbortWhy | null = null;
  private timeout: NodeJS.Timeout;
  private readonly heartbeat: NodeJS.Timeout;
  private readonly onStop = () => this.abort('stopped');

  constructor(
    private readonly options: WorkerOptions,
    private readonly claim: Claimed,
  ) {
    options.signal?.addEventListener('abort', this.onStop, { once: true });
    this.timeout = setTimeout(() => this.abort('timed_out'), claim.timeout_s * 1000);
    this.heartbeat = setInterval(() => this.beat(), Math.max(200, claim.heartbeat_s * 1000));
    this.aborted = new Promise<never>((_, reject) =>
      this.signal.addEventListener('abort', () => reject(this.signal.reason), { once: true }),
    );
    this.aborted.catch(() => {});
  }

  abort(why: AbortWhy): void {
    this.outcome ??= why;
    const message =
      why === 'timed_out'
        ? `timed out after ${this.claim.timeout_s}s`
        : why === 'verifier_timed_out'
          ? `verifier timed out after ${this.claim.timeout_s}s`
          : why;
    this.controller.abort(new Error(message));
  }

  /** The verifier gets a timeout of its own (harness.timeout_s), after the harness's. */
  verifierDeadline(): void {
    clearTimeout(this.timeout);
    this.timeout = setTimeout(() => this.abort('verifier_timed_out'), this.claim.timeout_s * 1000);
  }

  /** Throws the abort's reason once one happened (after a race the harness may have won). */
  check(): void {
    if (this.outcome) throw this.signal.reason;
  }

  stop(): void {
    clearTimeout(this.timeout);
    clearInterval(this.heartbeat);
    this.options.signal?.removeEventListener('abort', this.onStop);
  }

  private beat(): void {
    post(this.options, `/api/attempts/${this.claim.attempt.id}/heartbeat`, {
      rollout_id: this.claim.rollout.id,
    })
      .then(({ json }) => {
        if (HeartbeatReply.parse(json).cancel) this.abort('cancelled');
      })
      .catch((err) => {
        if (err instanceof DaemonHttpError && (err.status === 404 || err.status === 409))
          this.abort('cancelled');
      });
  }
}

/** Read with the rollout's own key: a worker holding a run's worker credential may not read rollouts. */
async function readRollout(
  options: WorkerOptions,
  claim: Claimed,
  signal: AbortSignal,
): Promise<RolloutDetail> {
  try {
    const path = `/api/rollouts/${claim.rollout.id}`;
    const { json } = await call({ ...options, token: claim.key }, 'GET', path, undefined, signal);
    return RolloutDetailSchema.parse(json);
  } catch (err) {
    throw new Error(`could not read rollout ${claim.rollout.id} back: ${errorText(err)}`);
  }
}

/** What the verifier of a claimed rollout is given (its llm calls read back from the daemon). */
async function verifierInput(
  options: WorkerOptions,
  claim: Claimed,
  result: RolloutOutcome | undefined,
  signal: AbortSignal,
): Promise<VerifierInput> {
  const detail = await readRollout(options, claim, signal);
  return {
    run_id: claim.rollout.run_id,
    rollout_id: claim.rollout.id,
    attempt_id: claim.attempt.id,
    task: claim.input ?? null,
    output: result?.output ?? finalOutput(detail.llm_calls, claim.attempt.id),
    stdout: result?.stdout ?? '',
    harness_reward: result?.reward ?? detail.reward ?? null,
  };
}

/** How an attempt ended, as its finish reports it. */
interface AttemptEnd {
  status: 'succeeded' | 'failed' | 'timed_out' | 'cancelled';
  error?: string;
  failure?: AttemptFailure;
  /** A failed attempt stores no reward. */
  reward?: number;
  verdict?: Verdict;
}

/** Runs the harness on a claimed rollout, then its verifier when the run rewards by one. */
async function runAttempt(options: WorkerOptions, claim: Claimed, watch: AttemptWatch): Promise<AttemptEnd> {
  const verify =
    options.verify ??
    (claim.reward === 'verifier' && claim.verifier?.length
      ? commandVerifier(claim.verifier, { cwd: options.cwd })
      : undefined);
  let phase: 'harness' | 'verifier' = 'harness';
  try {
    const result = await Promise.race([
      options.rollout({ ...claim, signal: watch.signal, daemonUrl: options.daemonUrl }),
      watch.aborted,
    ]);
    watch.check();
    // A harness may post its reward itself; one that neither gave nor posted one fails its attempt
    // (a missing reward is never taken as 0).
    if (
      !verify &&
      (result?.reward ?? undefined) === undefined &&
      (await readRollout(options, claim, watch.signal)).reward === null
    )
      throw new AttemptFailedError(
        noRewardText({ mode: claim.mode, rolloutId: claim.rollout.id, stdout: result?.stdout }),
        harnessFailure('no_reward'),
      );
    if (!verify) return { status: 'succeeded', reward: result?.reward ?? undefined };
    phase = 'verifier';
    watch.verifierDeadline();
    const input = await verifierInput(options, claim, result ?? undefined, watch.signal);
    const verdict = await Promise.race([verify(input, watch.signal), watch.aborted]);
    watch.check();
    if (typeof verdict?.reward !== 'number' || !Number.isFinite(verdict.reward))
      throw new Error(`gave no finite reward (${JSON.stringify(verdict?.reward)})`);
    return { status: 'succeeded', reward: verdict.reward, verdict };
  } catch (err) {
    const outcome = watch.outcome;
    return {
      status: outcome === 'timed_out' ? 'timed_out' : outcome === 'cancelled' ? 'cancelled' : 'failed',
      failure: attemptFailure(outcome, phase, err),
      error:
        outcome === 'stopped'
          ? 'the worker stopped'
          : phase === 'verifier' && !outcome
            ? `verifier failed: ${errorText(err)}`
            : errorText(err),
    };
  }
}

/** Reports a finished attempt to the daemon (a 409: the daemon ended it already). */
async function finishAttempt(
  options: WorkerOptions,
  claim: Claimed,
  end: AttemptEnd,
  log: (message: string) => void,
): Promise<void> {
  const { status, error, failure, reward, verdict } = end;
  try {
    await post(options, `/api/attempts/${claim.attempt.id}/finish`, {
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
}

/** Run rollouts of one run until the run ends (the daemon answers 410) or `signal` aborts. */
export async function runWorker(options: WorkerOptions): Promise<WorkerSummary> {
  const summary: WorkerSummary = { succeeded: 0, failed: 0, timed_out: 0, cancelled: 0 };
  const worker = options.worker ?? `${hostname()}:${process.pid}`;
  const log = options.log ?? (() => {});
  let over = false;

  const runOne = async (claim: Claimed) => {
    const watch = new AttemptWatch(options, claim);
    let end: AttemptEnd;
    try {
      end = await runAttempt(options, claim, watch);
    } finally {
      watch.stop();
    }
    summary[end.status]++;
    const { status, reward, verdict, error } = end;
    log(
      `rollout ${claim.rollout.id} ${status}${reward !== undefined ? ` reward=${reward}${verdict ? ' (verifier)' : ''}` : ''}${error ? `: ${error}` : ''}`,
    );
    if (watch.outcome === 'cancelled') return; // the daemon ended the attempt already
    await finishAttempt(options, claim, end, log);
  };

  /** Whether a failed claim ends claiming for good (the run ended, its credential was revoked); a wrong daemon token is thrown. */
  const claimEnds = (err: unknown): boolean => {
    if (err instanceof DaemonHttpError && (err.status === 410 || err.status === 404)) {
      log(`run ${options.runId}: ${err.message}`);
      return true;
    }
    if (!(err instanceof DaemonHttpError && err.status === 401)) return false;
    // A run's own worker credential is revoked when the run ends: that is the end of the work, not a
    // mistake. A wrong daemon token is the caller's mistake and is thrown.
    if (!options.token.startsWith(WORKER_KEY_PREFIX)) {
      over = true;
      throw err;
    }
    log(`run ${options.runId}: ${err.message}`);
    return true;
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
        if (claimEnds(err)) {
          over = true;
          break;
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
