// Who runs a run's rollouts. The daemon's own workers: for a run whose config names a harness command
// (and not `harness.workers: external`), the same loop as `harness-rl worker` (runWorker with the
// command harness, and the verifier) runs in the daemon, `harness.concurrency` rollouts at a time, from
// the run's start to its end, restarted when it dies. Each rollout's harness is a child process of its
// own (command.ts), so a crashing harness fails its attempt, not the daemon; the tail of its stdout and
// stderr is kept per attempt under DATA/attempts/. And presence: the workers that claimed or sent a
// heartbeat lately, per run, announced as a `workers` event whenever that set changes.
import { mkdirSync, readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { DaemonContext } from '../context';
import { errorText } from '../error-text';
import { RunConfig, workersMode } from '../protocol/config';
import type { Attempt, AttemptOutput, Run, RunWorkers } from '../protocol/entities';
import { type AttemptFailure, infrastructure } from '../protocol/failures';
import type { RayWorkersConfig } from '../protocol/placement';
import { redactText } from '../redact';
import { commandRollout, harnessDir } from './command';
import { PersistentHarness } from './persistent';
import { onDeadNode, type RayState, superviseRayJob, workerNode } from './ray';
import { shellWord } from './shell';
import { sleep } from './wait';
import { type RolloutContext, runWorker } from './worker';

/** How much of an attempt's output is kept (its tail). */
export const OUTPUT_TAIL = 64 * 1024;

const TERMINAL = new Set(['finished', 'failed', 'cancelled', 'stopped']);

/** The command that attaches a worker to a run from a shell. */
export function workerCommand(run: Pick<Run, 'id' | 'config'>, url: string, dataDir: string): string {
  const parsed = RunConfig.safeParse(run.config);
  const words = ['harness-rl', 'worker', '--run', run.id, '--url', url, '--data', dataDir];
  const command = parsed.success ? parsed.data.harness.command : undefined;
  return `${words.map(shellWord).join(' ')}${command?.length ? '' : ' -- <your harness command>'}`;
}

/** The tail of one attempt's output, written to DATA/attempts/<id>.log while it runs and when it ends. */
class OutputTail {
  private text = '';
  private truncated = false;
  private dirty = false;
  private readonly timer: NodeJS.Timeout;
  private writing: Promise<void> = Promise.resolve();

  constructor(private readonly file: string) {
    this.timer = setInterval(() => this.flush(), 1000);
    this.timer.unref();
  }

  append(chunk: string): void {
    this.text += chunk;
    if (this.text.length > OUTPUT_TAIL) {
      this.text = this.text.slice(-OUTPUT_TAIL);
      this.truncated = true;
    }
    this.dirty = true;
  }

  private flush(): Promise<void> {
    if (!this.dirty) return this.writing;
    this.dirty = false;
    // Harness output is shown by the API, so it is kept as the store keeps text: redacted.
    const body = `${this.truncated ? '1' : '0'}\n${redactText(this.text)}`;
    this.writing = this.writing.then(() => writeFile(this.file, body).catch(() => {}));
    return this.writing;
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    this.dirty = true;
    await this.flush();
  }
}

/** The kept output of an attempt a daemon worker ran (null: none kept here). */
export function readAttemptOutput(dataDir: string, attemptId: string): AttemptOutput | null {
  if (!/^[\w-]+$/.test(attemptId)) return null;
  let body: string;
  try {
    body = readFileSync(join(dataDir, 'attempts', `${attemptId}.log`), 'utf8');
  } catch {
    return null;
  }
  const newline = body.indexOf('\n');
  return { attempt_id: attemptId, truncated: body.startsWith('1'), output: body.slice(newline + 1) };
}

interface OwnWorkers {
  name: string;
  controller: AbortController;
  done: Promise<void>;
  error: string | null;
  /** harness.workers.ray: the run's Ray job. */
  ray?: RayState;
}

export interface WorkersOptions {
  /** A worker not seen (claim or heartbeat) for this long is gone (ms). */
  goneAfterMs: number;
  /** Replaces runWorker (tests of the restart). */
  runWorker?: typeof runWorker;
}

export class Workers {
  /** run id → worker name → when it was last seen (ms). */
  private readonly seen = new Map<string, Map<string, number>>();
  private readonly lastSeen = new Map<string, number>();
  private readonly own = new Map<string, OwnWorkers>();
  /** The output tails of attempts that remote workers (Ray) stream here. */
  private readonly remote = new Map<string, OutputTail>();
  private readonly sweeper: NodeJS.Timeout;

  constructor(
    private readonly ctx: DaemonContext,
    private readonly options: WorkersOptions,
  ) {
    this.sweeper = setInterval(() => this.sweep(), Math.min(1000, options.goneAfterMs / 2));
    this.sweeper.unref();
  }

  /** A worker claimed (or waits to claim) a rollout of the run, or sent a heartbeat for one. */
  saw(runId: string, name: string): void {
    // Names come from workers and are shown by the API and the events, like stored text: redacted.
    const worker = redactText(name);
    let workers = this.seen.get(runId);
    if (!workers) {
      workers = new Map();
      this.seen.set(runId, workers);
    }
    const now = Date.now();
    const known = workers.has(worker);
    workers.set(worker, now);
    this.lastSeen.set(runId, now);
    if (!known) this.announce(runId);
  }

  /** More output of an attempt a remote worker runs (POST /api/attempts/:id/output). */
  appendOutput(attemptId: string, chunk: string): void {
    let tail = this.remote.get(attemptId);
    if (!tail) {
      mkdirSync(join(this.ctx.dataDir, 'attempts'), { recursive: true });
      tail = new OutputTail(join(this.ctx.dataDir, 'attempts', `${attemptId}.log`));
      this.remote.set(attemptId, tail);
    }
    tail.append(chunk);
  }

  /** The attempt finished: its streamed output is written a last time. */
  closeOutput(attemptId: string): void {
    const tail = this.remote.get(attemptId);
    if (!tail) return;
    this.remote.delete(attemptId);
    tail.close().catch(() => {});
  }

  private sweep(): void {
    const before = Date.now() - this.options.goneAfterMs;
    for (const [runId, workers] of this.seen) {
      let changed = false;
      for (const [name, at] of workers) {
        if (at < before) {
          workers.delete(name);
          changed = true;
        }
      }
      if (workers.size === 0) this.seen.delete(runId);
      if (changed) this.announce(runId);
    }
  }

  private announce(runId: string): void {
    this.info(runId)
      .then((workers) => {
        if (workers) this.ctx.store.announce({ type: 'workers', workers });
      })
      .catch(() => {});
  }

  /** Who runs the run's rollouts now (null: no such run). */
  async info(runId: string): Promise<RunWorkers | null> {
    const run = await this.ctx.store.getRun(runId);
    if (!run) return null;
    const parsed = RunConfig.safeParse(run.config);
    const own = this.own.get(runId);
    const last = this.lastSeen.get(runId);
    return {
      run_id: runId,
      mode: parsed.success ? workersMode(parsed.data.harness) : 'external',
      workers: [...(this.seen.get(runId) ?? new Map<string, number>())]
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([name, at]) => ({ name, daemon: own?.name === name, last_seen: new Date(at).toISOString() })),
      last_seen_at: last === undefined ? null : new Date(last).toISOString(),
      command: workerCommand(run, this.ctx.baseUrl(), this.ctx.dataDir),
      error: own?.ray?.error ?? own?.error ?? null,
      ...(own?.ray
        ? { ray: { address: own.ray.address, job_id: own.ray.job_id, status: own.ray.status } }
        : {}),
    };
  }

  /**
   * Start the daemon's own workers for a run that runs its harness command here (else nothing).
   * `envOf` adds variables to a rollout's command (an evaluation's per-rollout HARNESS_RL_SEED).
   */
  start(run: Run, config: RunConfig, envOf?: (rc: RolloutContext) => Record<string, string>): void {
    if (this.own.has(run.id)) return;
    if (typeof config.harness.workers === 'object') {
      this.startRay(run, config, config.harness.workers.ray);
      return;
    }
    if (workersMode(config.harness) !== 'daemon') return;
    const controller = new AbortController();
    const own: OwnWorkers = {
      name: `daemon:${process.pid}`,
      controller,
      done: Promise.resolve(),
      error: null,
    };
    this.own.set(run.id, own);
    own.done = this.supervise(run, config, own, envOf).catch((err) =>
      this.ctx.log('daemon worker ended', { run_id: run.id, error: errorText(err) }),
    );
  }

  /** Submit the run's workers to its Ray cluster as a job, kept running until the run stops. */
  private startRay(run: Run, config: RunConfig, ray: RayWorkersConfig): void {
    const controller = new AbortController();
    const state: RayState = {
      address: ray.address,
      job_id: null,
      status: null,
      error: null,
      dead: new Set(),
    };
    const own: OwnWorkers = { name: 'ray', controller, done: Promise.resolve(), error: null, ray: state };
    this.own.set(run.id, own);
    const waitUrl = async () => {
      while (!this.ctx.baseUrl() && !controller.signal.aborted) await sleep(20, controller.signal);
    };
    own.done = waitUrl()
      .then(() =>
        superviseRayJob(ray, {
          runId: run.id,
          daemonUrl: this.ctx.baseUrl(),
          credential: async () => {
            const key = await this.ctx.store.issueWorkerKey(run.id);
            if (!key) throw new Error(`no run ${run.id} to issue a worker credential for`);
            return key;
          },
          nodesLost: (ids) => this.nodesLost(run.id, state, ids),
          concurrency: config.harness.concurrency,
          cwd: run.base_dir ?? undefined,
          state,
          signal: controller.signal,
          runOver: async () => TERMINAL.has((await this.ctx.store.getRun(run.id))?.status ?? 'failed'),
          changed: () => this.announce(run.id),
        }),
      )
      .catch((err) => this.ctx.log('ray workers ended', { run_id: run.id, error: errorText(err) }));
  }

  /** Ray reported nodes dead: the run's running attempts there end now as node_lost (and are retried). */
  private async nodesLost(runId: string, state: RayState, ids: string[]): Promise<void> {
    this.ctx.log('ray nodes died', { run_id: runId, nodes: ids });
    for (let cursor: string | undefined, more = true; more; ) {
      const page = await this.ctx.store.listRollouts({
        run_id: runId,
        status: 'running',
        cursor,
        limit: 500,
      });
      for (const rollout of page.items)
        for (const attempt of await this.ctx.store.listAttempts(rollout.id))
          if (attempt.status === 'running' && onDeadNode(state, attempt.worker))
            await this.ctx.store
              .finishAttempt(
                attempt.id,
                'unresponsive',
                `its Ray node ${workerNode(attempt.worker)}… died`,
                infrastructure('node_lost'),
              )
              .catch(() => {}); // it ended meanwhile
      cursor = page.next_cursor ?? undefined;
      more = cursor !== undefined;
    }
  }

  /**
   * Why an attempt of the run that stopped sending heartbeats failed, when its workers know better
   * than `worker_lost`: its Ray node died. Null: they do not.
   */
  lapseFailure(runId: string, attempt: Pick<Attempt, 'worker'>): AttemptFailure | null {
    const ray = this.own.get(runId)?.ray;
    return ray && onDeadNode(ray, attempt.worker) ? infrastructure('node_lost') : null;
  }

  /**
   * Stop a run's own workers: their harness processes are killed before this settles. `revoke` (the run
   * ended, or paused): its worker credential stops working too; a daemon that shuts down keeps it for
   * the Ray job the next daemon adopts.
   */
  async stop(runId: string, options: { revoke?: boolean } = {}): Promise<void> {
    const own = this.own.get(runId);
    if (own) {
      own.controller.abort();
      await own.done;
    }
    if (options.revoke) await this.ctx.store.revokeWorkerKey(runId).catch(() => {});
    if (!own) return;
    if (this.own.get(runId) === own) this.own.delete(runId);
    this.seen.get(runId)?.delete(own.name);
    this.announce(runId);
  }

  async close(): Promise<void> {
    clearInterval(this.sweeper);
    await Promise.all([...this.own.keys()].map((id) => this.stop(id)));
  }

  /** runWorker until the run ends or the workers are stopped; started again after it dies. */
  private async supervise(
    run: Run,
    config: RunConfig,
    own: OwnWorkers,
    envOf?: (rc: RolloutContext) => Record<string, string>,
  ): Promise<void> {
    const { ctx } = this;
    const signal = own.controller.signal;
    const argv = config.harness.command ?? [];
    const cwd = run.base_dir ?? undefined;
    const harnessCwd = harnessDir(cwd, config.harness.dir);
    const outputs = join(ctx.dataDir, 'attempts');
    mkdirSync(outputs, { recursive: true });
    // runWorker stops waiting for an aborted rollout at once; its harness process ends a little later.
    const running = new Set<Promise<unknown>>();
    const persistent =
      config.harness.mode === 'persistent' ? new PersistentHarness(argv, { cwd: harnessCwd }) : null;
    const rollout = (rc: RolloutContext) => {
      const tail = new OutputTail(join(outputs, `${rc.attempt.id}.log`));
      const started = persistent
        ? persistent.rollout(rc, (chunk) => tail.append(chunk), envOf?.(rc))
        : commandRollout(argv, {
            cwd: harnessCwd,
            env: envOf?.(rc),
            onOutput: (_, chunk) => tail.append(chunk),
          })(rc);
      const result = started.finally(() => tail.close());
      const settled = result.catch(() => {}).finally(() => running.delete(settled));
      running.add(settled);
      return result;
    };
    // The daemon listens only after the cluster resumed its runs.
    while (!ctx.baseUrl() && !signal.aborted) await sleep(20, signal);
    let backoff = 500;
    while (!signal.aborted) {
      try {
        await (this.options.runWorker ?? runWorker)({
          daemonUrl: ctx.baseUrl(),
          token: ctx.token,
          runId: run.id,
          concurrency: config.harness.concurrency,
          worker: own.name,
          rollout,
          cwd,
          signal,
          log: (message) => ctx.log(`worker: ${message}`, { run_id: run.id }),
        });
        break; // the run ended (or the workers were stopped)
      } catch (err) {
        if (signal.aborted) break;
        own.error = `the daemon's worker stopped (${errorText(err)}); restarting`;
        ctx.log('daemon worker died, restarting', { run_id: run.id, error: errorText(err) });
        this.announce(run.id);
        await sleep(backoff, signal);
        backoff = Math.min(backoff * 2, 10_000);
        own.error = null;
      }
    }
    await Promise.all(running);
    await persistent?.close();
  }
}
