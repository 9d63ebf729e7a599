// The SDK worker loop: claim a rollout of a run, keep its attempt alive with heartbeats, run the
// harness on it, post the reward and finish the attempt. `harness-rl worker` and the demo use it.
import { hostname } from 'node:os';
import { type Claimed, Claimed as ClaimedSchema, HeartbeatReply } from './wire';

export interface RolloutContext extends Claimed {
  /** Aborted when the attempt is over (cancelled, timed out) or the worker stops: stop the harness. */
  signal: AbortSignal;
  daemonUrl: string;
}

export interface RolloutOutcome {
  /** The reward; leave it out when the harness posted it itself. */
  reward?: number;
}

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
  const response = await fetch(`${options.daemonUrl.replace(/\/$/, '')}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${options.token}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal,
  });
  const text = await response.text();
  let json: unknown = null;
  try {
    json = text ? JSON.parse(text) : null;
  } catch {
    json = text;
  }
  if (response.status >= 400) {
    const message =
      (json as { error?: { message?: string } } | null)?.error?.message ?? `HTTP ${response.status} ${text}`;
    throw new DaemonHttpError(response.status, message);
  }
  return { status: response.status, json };
}

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** Run rollouts of one run until the run ends (the daemon answers 410) or `signal` aborts. */
export async function runWorker(options: WorkerOptions): Promise<WorkerSummary> {
  const summary: WorkerSummary = { succeeded: 0, failed: 0, timed_out: 0, cancelled: 0 };
  const worker = options.worker ?? `${hostname()}:${process.pid}`;
  const log = options.log ?? (() => {});
  let over = false;

  const runOne = async (claim: Claimed) => {
    const attemptPath = `/api/attempts/${claim.attempt.id}`;
    const controller = new AbortController();
    let outcome: 'timed_out' | 'cancelled' | 'stopped' | null = null;
    const abort = (why: 'timed_out' | 'cancelled' | 'stopped') => {
      outcome ??= why;
      controller.abort(new Error(why === 'timed_out' ? `timed out after ${claim.timeout_s}s` : why));
    };
    const onStop = () => abort('stopped');
    options.signal?.addEventListener('abort', onStop, { once: true });
    const timeout = setTimeout(() => abort('timed_out'), claim.timeout_s * 1000);
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
    let reward: number | undefined;
    try {
      // Race the harness against the abort, so a harness that ignores its signal cannot hold the slot.
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
    } catch (err) {
      status = outcome === 'timed_out' ? 'timed_out' : outcome === 'cancelled' ? 'cancelled' : 'failed';
      error = outcome === 'stopped' ? 'the worker stopped' : errorText(err);
    } finally {
      clearTimeout(timeout);
      clearInterval(heartbeat);
      options.signal?.removeEventListener('abort', onStop);
    }
    summary[status]++;
    log(
      `rollout ${claim.rollout.id} ${status}${reward !== undefined ? ` reward=${reward}` : ''}${error ? `: ${error}` : ''}`,
    );
    if (outcome === 'cancelled') return; // the daemon ended the attempt already
    try {
      await post(options, `${attemptPath}/finish`, { status, error, reward, rollout_id: claim.rollout.id });
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
