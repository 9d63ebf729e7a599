// One running run's loop (RunLoop.body reads top to bottom): each step samples groups of rollouts
// (claimed by harness workers), turns the finished groups into samples (daemon/samples), trains on them
// (the reference engine or a trainer node), brings every inference backend to the new weights, records
// metrics and the new model version, and tells the proxy which versions may serve (sync: the newest
// only; async: within `max_staleness`). A `validation:` threshold crossed pauses the run.
import { refillTasks, tasksForStep } from '../api/task-order';
import type { DaemonContext } from '../context';
import { errorText } from '../error-text';
import type { RunConfig } from '../protocol/config';
import type { Rollout, Run, Task } from '../protocol/entities';
import type { TrainerStepResult } from '../protocol/node';
import { policyLossOf, type StepValidation, type Trainer, type TrainResult } from '../protocol/training';
import type { ProxyHandle } from '../proxy';
import { buildOptionsOf, buildSamples, trajectoriesFromStore } from '../samples';
import { BackendLoop, Halted } from './backend-loop';
import {
  awaitRollouts,
  type Batch,
  cancelOpenWork,
  closeGroups,
  meanStd,
  rolloutsOf,
  sampleBatch,
} from './batches';
import { informativeGroups, keepInformative, mergeBatches } from './dynamic-sampling';
import { failedAttempts, nothingToTrainOn, stepRollouts } from './lost';
import type { NodeRegistry } from './nodes/registry';
import { stepMetrics } from './step-metrics';
import { ValidationGate, validationMetrics } from './validation-gate';

const TERMINAL_ROLLOUT = new Set(['succeeded', 'failed', 'cancelled']);

/** A step went past the run's `validation:` thresholds: the run pauses with this message. */
class Paused extends Error {}

/** One running run. `done` settles when the loop ends (finished, stopped, failed or halted). */
export class RunLoop extends BackendLoop {
  private readonly gate: ValidationGate;

  constructor(ctx: DaemonContext, proxy: ProxyHandle, nodes: NodeRegistry, runId: string, config: RunConfig) {
    super(ctx, proxy, nodes, runId, config);
    this.gate = new ValidationGate(config.validation);
  }

  /**
   * Run the loop; then release the engine and call `released` (which stops the run's own workers)
   * before the final status is stored, so whoever sees the run finished can start the next one at once.
   */
  protected async execute(released: () => Promise<void>): Promise<void> {
    let patch: Partial<Pick<Run, 'status' | 'error'>> | null = null;
    try {
      await this.body();
      patch = { status: 'finished' };
    } catch (err) {
      if (this.stopRequested) patch = { status: 'stopped' };
      else if (err instanceof Paused) {
        this.ctx.log('run paused', { run_id: this.runId, reason: err.message });
        patch = { status: 'paused', error: err.message };
      }
      // Halting (daemon shutdown) ends whatever the loop was waiting for: not a failure of the run.
      else if (!(err instanceof Halted) && !this.abort.signal.aborted) {
        this.ctx.log('run failed', { run_id: this.runId, error: errorText(err) });
        patch = { status: 'failed', error: errorText(err) };
      }
      if (patch) await cancelOpenWork(this.store, this.runId).catch(() => {});
    }
    await this.closeBackends(released, 'a run');
    if (patch) await this.store.updateRun(this.runId, patch).catch(() => {});
  }

  private async body(): Promise<void> {
    const { config, runId, store } = this;
    const run = await this.mustRun();
    // Rollouts and groups left open by an earlier daemon belong to a step that starts over now.
    await cancelOpenWork(this.store, this.runId);
    const train = (await store.listTasks(runId, 'train')).sort((a, b) => a.index - b.index);
    const validation = (await store.listTasks(runId, 'validation')).sort((a, b) => a.index - b.index);
    if (train.length === 0) throw new Error('the run has no train tasks');

    const opened = await this.openBackends(run.step > 0);
    const backends = this.backends!;
    let step = run.step;
    let version = opened.version;
    // The trainer node applied this step before the daemon went down: record it, don't train it again.
    const applied = opened.last?.key === `${runId}:${step}` ? opened.last.result : null;
    if (applied) {
      await this.recordApplied(step, applied);
      version = applied.model_version;
      step++;
    }
    if (version !== run.model_version && !applied && run.step === 0 && config.model.from_run) {
      // A run that starts from another run's weights starts at their version.
      await store.updateRun(runId, { model_version: version });
    } else if (version !== run.model_version && !applied) {
      this.ctx.log('the trainer resumed at another version than the run', {
        run_id: runId,
        run_version: run.model_version,
        trainer_version: version,
      });
    }
    await backends.sync(version);
    this.allowVersions(version);

    const { schedule } = config;
    const overlap = schedule.mode === 'async' && schedule.max_staleness >= 1;
    let next: Batch | null = null;
    while (step < schedule.steps) {
      this.check();
      const first = next ?? (await this.sample(step, this.trainTasks(train, step), config.algorithm.n));
      next = null;
      const { batch: current, rollouts } = await this.sampleRounds(first, train);
      // async: the next step samples with the current weights while this one trains (staleness ≤ 1).
      if (overlap && step + 1 < schedule.steps) {
        next = await this.sample(step + 1, this.trainTasks(train, step + 1), config.algorithm.n);
      }
      const metrics = await this.learn(current, rollouts, backends.trainer, version);
      version = metrics.version;
      if (metrics.trained) await backends.sync(version);
      this.allowVersions(version);
      const done = step + 1;
      if (schedule.validate_every > 0 && validation.length > 0 && done % schedule.validate_every === 0) {
        metrics.values.val_reward = await this.validate(step, validation);
      }
      if (metrics.trained) {
        await store.addModelVersion({
          run_id: runId,
          version,
          path: metrics.checkpoint,
          metrics: { step, ...metrics.values },
        });
      }
      metrics.values.seconds = (Date.now() - current.startedAt) / 1000;
      const judged = this.gate.observe(step, metrics.values);
      if (this.gate.enabled) metrics.values.validation_breaches = judged.breaches.length;
      // The scatter first: whoever hears of the step's metrics can fetch it.
      if (metrics.validation) await store.setStepValidation(runId, step, metrics.validation);
      await store.addRunMetrics(runId, step, metrics.values);
      await store.updateRun(runId, { step: done, model_version: version });
      step = done;
      if (judged.pause) throw new Paused(`${judged.pause}. Resume with: harness-rl run resume ${runId}`);
    }
  }

  /** Records a step the trainer had applied when the daemon went down (its result came back on open). */
  private async recordApplied(step: number, applied: TrainerStepResult): Promise<void> {
    const { store, runId } = this;
    const version = applied.model_version;
    if (applied.validation) await store.setStepValidation(runId, step, applied.validation);
    this.ctx.log('the trainer had applied the step already; recording it', { run_id: runId, step, version });
    await store.addModelVersion({
      run_id: runId,
      version,
      path: applied.checkpoint ?? applied.weights?.path ?? null,
      metrics: { step, recovered: 1 },
    });
    await store.addRunMetrics(runId, step, {
      loss: applied.loss,
      kl: applied.kl,
      entropy: applied.entropy,
      clip_fraction: applied.clip_fraction,
      ...validationMetrics(applied.validation),
      ...applied.metrics,
      recovered: 1,
    });
    await store.updateRun(runId, { step: step + 1, model_version: version });
  }

  private async mustRun(): Promise<Run> {
    const run = await this.store.getRun(this.runId);
    if (!run) throw new Error(`run ${this.runId} is gone`);
    return run;
  }

  private trainTasks(train: Task[], step: number): Task[] {
    return tasksForStep(train, step, this.config.schedule.groups_per_step, this.config.schedule.seed);
  }

  /** sync: only the newest version serves; async: versions within max_staleness. */
  private allowVersions(version: number): void {
    const { mode, max_staleness } = this.config.schedule;
    this.proxy.backends.setMinModelVersion(
      mode === 'sync' ? version : Math.max(0, version - max_staleness),
      this.runId,
    );
  }

  /** Create one group of `n` rollouts per task; workers claim them. */
  private sample(step: number, tasks: Task[], n: number): Promise<Batch> {
    return sampleBatch(this.store, this.runId, step, tasks, n, this.config.harness);
  }

  /**
   * Wait for the step's groups to finish; with schedule.dynamic_sampling, while fewer than groups_per_step
   * of them are informative, sample another round (refillTasks) and wait for it, at most max_rounds more.
   * A round with no rollout to train on (the harness fails) ends the refill: more rounds would fail too.
   */
  private async sampleRounds(first: Batch, train: Task[]): Promise<{ batch: Batch; rollouts: Rollout[] }> {
    const { schedule, algorithm } = this.config;
    let batch = first;
    let last = await this.waitFinished(batch);
    let rollouts = last;
    const maxRounds = schedule.dynamic_sampling?.max_rounds ?? 0;
    for (let round = 1; round <= maxRounds; round++) {
      if (stepRollouts(last, algorithm.incomplete_groups).train.length === 0) break;
      const usable = stepRollouts(rollouts, algorithm.incomplete_groups).train;
      if (informativeGroups(usable).size >= schedule.groups_per_step) break;
      const tasks = refillTasks(train, batch.step, schedule.groups_per_step, schedule.seed, round);
      const more = await this.sample(batch.step, tasks, algorithm.n);
      last = await this.waitFinished(more);
      rollouts = [...rollouts, ...last];
      batch = mergeBatches(batch, more);
    }
    return { batch, rollouts };
  }

  /** Wait until every rollout of the batch is finished, timing out attempts that run too long. */
  private async waitFinished(batch: Batch): Promise<Rollout[]> {
    // With a verifier, the worker gives the harness and then the verifier harness.timeout_s each.
    const timeoutMs =
      this.config.harness.timeout_s * 1000 * (this.config.harness.reward === 'verifier' ? 2 : 1);
    for (;;) {
      this.check();
      const rollouts = await rolloutsOf(this.store, batch);
      const open = rollouts.filter((r) => !TERMINAL_ROLLOUT.has(r.status));
      if (open.length === 0) return rollouts;
      await awaitRollouts(this.store, this.runId, open, timeoutMs, this.abort.signal);
      // Let a burst of finishing rollouts settle before listing again.
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** Build samples from the finished groups and train on them. */
  private async learn(
    batch: Batch,
    rollouts: Rollout[],
    trainer: Trainer,
    version: number,
  ): Promise<{
    version: number;
    trained: boolean;
    checkpoint: string | null;
    values: Record<string, number | null>;
    validation: StepValidation | null;
  }> {
    const { store, config } = this;
    const { algorithm } = config;
    const sampleSeconds = (Date.now() - batch.startedAt) / 1000;
    const split = stepRollouts(rollouts, algorithm.incomplete_groups);
    if (split.train.length === 0) {
      await closeGroups(this.store, batch, rollouts, split.droppedGroups);
      throw new Error(nothingToTrainOn(batch.step, rollouts, split));
    }
    const dynamic = config.schedule.dynamic_sampling
      ? keepInformative(batch, split.train, config.schedule.groups_per_step)
      : null;
    const finished = dynamic?.train ?? split.train;
    let responseTokens = 0;
    let oldest = version;
    const trajectories = await trajectoriesFromStore(store, finished, (calls) => {
      for (const call of calls) {
        responseTokens += call.response_ids?.length ?? 0;
        if (call.model_version !== null) oldest = Math.min(oldest, call.model_version);
      }
    });
    const built = buildSamples(trajectories, buildOptionsOf(algorithm, dynamic !== null));
    for (const [id, { stats, prefix_breaks }] of built.rollouts) {
      await store.setRolloutStats(id, stats, prefix_breaks);
    }
    const rewards = meanStd(
      await closeGroups(this.store, batch, rollouts, split.droppedGroups, dynamic?.kept),
    );
    let result: TrainResult | null = null;
    if (built.samples.length > 0) {
      this.check();
      result = await trainer.train({
        run_id: this.runId,
        step: batch.step,
        model_version: oldest,
        loss: policyLossOf(algorithm),
        samples: built.samples,
      });
    }
    const values = stepMetrics({
      rollouts,
      built,
      rewards,
      result,
      version,
      oldest,
      sampleSeconds,
      responseTokens,
      trainerMetrics: this.backends?.trainerMetrics,
    });
    Object.assign(values, split.metrics, dynamic?.metrics, await failedAttempts(store, rollouts));
    return {
      version: result?.model_version ?? version,
      trained: result !== null,
      checkpoint: result?.checkpoint ?? null,
      values,
      validation: result?.validation ?? null,
    };
  }

  /** One rollout per validation task with the current weights; no training. Returns the mean reward. */
  private async validate(step: number, tasks: Task[]): Promise<number | null> {
    const batch = await this.sample(step, tasks, 1);
    const rollouts = await this.waitFinished(batch);
    return meanStd(await closeGroups(this.store, batch, rollouts)).mean;
  }
}
