// The run scheduler: starts, stops and resumes runs, one RunLoop each (./run-loop: sample, train,
// sync the weights, record), and ends the attempts of workers that stopped sending heartbeats.
import { restoreSecrets } from '../config/held-secrets';
import type { DaemonContext, RunController } from '../context';
import { errorText } from '../error-text';
import { EvalLoop } from '../eval/loop';
import { RunConfig } from '../protocol/config';
import type { ProxyHandle } from '../proxy';
import { StoreError } from '../store/store';
import { readAttemptOutput, type Workers } from '../worker/workers';
import { cancelOpenWork } from './batches';
import { NodeRegistry } from './nodes/registry';
import { checkEndpoints } from './run-backends';
import { RunLoop } from './run-loop';
import { StandbyEngine } from './standby';

export interface SchedulerOptions {
  /** Seconds between worker heartbeats (told to the worker with each claim). */
  heartbeatSeconds: number;
  /** How often the unresponsive sweeper runs (ms). */
  sweepIntervalMs: number;
  /** An attempt whose last heartbeat is older than this is ended as unresponsive (ms). */
  heartbeatTimeoutMs: number;
}

/** Starts, stops and resumes runs; sweeps unresponsive attempts. */
export class Scheduler implements RunController {
  /** Running runs: training ones (RunLoop) and evaluations (EvalLoop, no training). */
  private readonly loops = new Map<string, RunLoop | EvalLoop>();
  private readonly sweeper: NodeJS.Timeout;
  private sweeping = false;
  private closed = false;
  /** Node agents the runs use (connections shared between runs). */
  readonly nodes: NodeRegistry;
  /** Serves `reference` recordings while no run trains. */
  readonly standby: StandbyEngine;

  constructor(
    private readonly ctx: DaemonContext,
    private readonly proxy: ProxyHandle,
    private readonly options: SchedulerOptions,
    /** Presence of workers and the daemon's own workers (started and stopped with each run). */
    readonly workers: Workers,
  ) {
    this.sweeper = setInterval(() => void this.sweep(), options.sweepIntervalMs);
    this.sweeper.unref();
    this.nodes = new NodeRegistry(ctx.store, ctx.log);
    this.standby = new StandbyEngine(ctx, proxy, () => this.loops.size > 0);
  }

  /** Start (or resume from its stored step) a run; throws when its config cannot run here. */
  async start(runId: string): Promise<void> {
    if (this.closed) throw new Error('the scheduler is closed');
    if (this.loops.has(runId)) return;
    const run = await this.ctx.store.getRun(runId);
    if (!run) throw new StoreError('not_found', `no run ${runId}`, 'id');
    if (run.status === 'finished') return;
    const config = RunConfig.parse(restoreSecrets(this.ctx.dataDir, `run:${runId}`, run.config));
    checkEndpoints(config);
    const evaluation = await this.ctx.store.evaluationOfRun(runId);
    if (evaluation && evaluation.status !== 'running') return;
    await this.ctx.store.updateRun(runId, { status: 'running', error: null });
    const loop = evaluation
      ? new EvalLoop(this.ctx, this.proxy, this.nodes, runId, config, evaluation)
      : new RunLoop(this.ctx, this.proxy, this.nodes, runId, config);
    this.loops.set(runId, loop);
    // The run's rollouts must only reach the run's own engine.
    await this.standby.reconcile();
    loop.begin(async () => {
      if (this.loops.get(runId) === loop) this.loops.delete(runId);
      void this.standby.reconcile();
      // The run ended (not the daemon): its worker credential goes with its workers.
      await this.workers.stop(runId, { revoke: !this.closed });
    });
    this.workers.start(run, config, loop instanceof EvalLoop ? loop.envOf : undefined);
  }

  get heartbeatSeconds(): number {
    return this.options.heartbeatSeconds;
  }

  /** Who runs the run's rollouts now (null: no such run). */
  runWorkers(runId: string) {
    return this.workers.info(runId);
  }

  attemptOutput(attemptId: string) {
    return readAttemptOutput(this.ctx.dataDir, attemptId);
  }

  async stop(runId: string): Promise<void> {
    const loop = this.loops.get(runId);
    if (loop) {
      await loop.stop();
      return;
    }
    const run = await this.ctx.store.getRun(runId);
    if (!run || run.status === 'finished' || run.status === 'failed' || run.status === 'stopped') return;
    await cancelOpenWork(this.ctx.store, runId);
    await this.ctx.store.updateRun(runId, { status: 'stopped' });
  }

  /** Resume every run a previous daemon left running. */
  async resumeAll(): Promise<void> {
    let cursor: string | undefined;
    const running: string[] = [];
    do {
      const page = await this.ctx.store.listRuns({ cursor, limit: 1000 });
      running.push(...page.items.filter((r) => r.status === 'running').map((r) => r.id));
      cursor = page.next_cursor ?? undefined;
    } while (cursor);
    for (const id of running) {
      try {
        this.ctx.log('resuming run', { run_id: id });
        await this.start(id);
      } catch (err) {
        await this.ctx.store.updateRun(id, { status: 'failed', error: errorText(err) }).catch(() => {});
      }
    }
  }

  /** End attempts of running runs whose worker stopped sending heartbeats. */
  private async sweep(): Promise<void> {
    if (this.sweeping || this.loops.size === 0) return;
    this.sweeping = true;
    try {
      for (const attempt of await this.ctx.store.listStaleAttempts(this.options.heartbeatTimeoutMs)) {
        const rollout = await this.ctx.store.getRollout(attempt.rollout_id);
        if (rollout?.kind !== 'run' || !rollout.run_id || !this.loops.has(rollout.run_id)) continue;
        // Its Ray node may be known dead (node_lost); else the worker is lost (the store's default).
        const failure = this.workers.lapseFailure(rollout.run_id, attempt);
        try {
          await this.ctx.store.finishAttempt(
            attempt.id,
            'unresponsive',
            `no heartbeat for ${Math.round(this.options.heartbeatTimeoutMs / 1000)}s${failure ? '; its Ray node died' : ''}`,
            failure,
          );
        } catch (err) {
          if (!(err instanceof StoreError)) throw err;
        }
      }
    } catch (err) {
      this.ctx.log('attempt sweep failed', { error: errorText(err) });
    } finally {
      this.sweeping = false;
    }
  }

  /** Daemon shutdown: runs stay 'running' in the store and resume with the next daemon. */
  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.sweeper);
    await Promise.all([...this.loops.values()].map((loop) => loop.halt()));
    this.loops.clear();
    await this.workers.close();
    await this.standby.close();
    await this.nodes.close();
  }
}
