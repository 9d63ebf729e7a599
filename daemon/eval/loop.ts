// One running evaluation (EvalLoop.body reads top to bottom): bring up the run's backends at their
// version (no trainer step ever runs), queue every task of the split `attempts` times (each attempt
// with its own seed, HARNESS_RL_SEED), retry attempts that failed for the infrastructure's sake,
// and store the per-task results and the split's figures. The run machinery (store, workers, proxy)
// runs the rollouts as for training.
import { BackendLoop, Halted } from '../cluster/backend-loop';
import { awaitRollouts, cancelOpenWork } from '../cluster/batches';
import type { NodeRegistry } from '../cluster/nodes/registry';
import type { DaemonContext } from '../context';
import { errorText } from '../error-text';
import type { RunConfig } from '../protocol/config';
import { FINISHED_ROLLOUT, type RolloutStatus, type Task } from '../protocol/entities';
import type { RolloutContext } from '../protocol/worker';
import type { ProxyHandle } from '../proxy';
import type { StoredEvaluation } from '../store/store';
import { failureOf } from './failures';
import { attemptProgress } from './progress';
import { type Slot, summarize, taskResults } from './summary';

/** The seed of attempt `attempt` of task `index` in an evaluation seeded `seed` (same for its retries). */
export function attemptSeed(seed: number, index: number, attempt: number): number {
  return (((seed * 7919 + index * 101 + attempt) % 2 ** 31) + 2 ** 31) % 2 ** 31;
}

export class EvalLoop extends BackendLoop {
  private readonly seeds = new Map<string, number>();
  /** The attempts as last announced (an `evaluation_progress` event goes out when they change). */
  private announced = '';

  constructor(
    ctx: DaemonContext,
    proxy: ProxyHandle,
    nodes: NodeRegistry,
    runId: string,
    config: RunConfig,
    private readonly evaluation: StoredEvaluation,
  ) {
    super(ctx, proxy, nodes, runId, config);
  }

  /** What the daemon's workers add to an attempt's env: its seed. */
  readonly envOf = (rc: RolloutContext): Record<string, string> => {
    const seed = this.seeds.get(rc.rollout.id);
    return seed === undefined ? {} : { HARNESS_RL_SEED: String(seed) };
  };

  protected async execute(released: () => Promise<void>): Promise<void> {
    const id = this.evaluation.id;
    let status: 'finished' | 'failed' | 'stopped' | null = null;
    let error: string | null = null;
    try {
      await this.body();
      status = 'finished';
    } catch (err) {
      if (this.stopRequested) status = 'stopped';
      else if (!(err instanceof Halted) && !this.abort.signal.aborted) {
        status = 'failed';
        error = errorText(err);
        this.ctx.log('evaluation failed', { evaluation_id: id, error });
      }
      if (status) await cancelOpenWork(this.store, this.runId).catch(() => {});
    }
    await this.closeBackends(released, 'an evaluation');
    if (!status) return;
    const finished_at = new Date().toISOString();
    await this.store
      .updateEvaluation(id, status === 'finished' ? { status, finished_at } : { status, error, finished_at })
      .catch(() => {});
    await this.store
      .updateRun(this.runId, { status: status === 'finished' ? 'finished' : status, error })
      .catch(() => {});
  }

  private async body(): Promise<void> {
    const { store, runId, evaluation } = this;
    const spec = evaluation.spec as { pass_threshold?: number; infrastructure_retries?: number };
    await cancelOpenWork(store, runId); // an evaluation a previous daemon left starts over
    const tasks = (await store.listTasks(runId, evaluation.split)).sort((a, b) => a.index - b.index);
    if (tasks.length === 0) throw new Error(`the ${evaluation.split} split has no tasks`);
    const { version } = await this.openBackends(false);
    await this.backends!.sync(version);
    this.proxy.backends.setMinModelVersion(version, runId);
    await store.updateEvaluation(evaluation.id, { model_version: version });
    const started = Date.now();
    const slots = await this.queue(tasks);
    await this.settle(slots, spec.infrastructure_retries ?? 2);
    const options = { attempts: evaluation.attempts, passThreshold: spec.pass_threshold ?? 1 };
    const results = await taskResults(store, slots, options);
    const summary = summarize(results, {
      ...options,
      seed: evaluation.seed,
      wallSeconds: (Date.now() - started) / 1000,
      infrastructureRetries: spec.infrastructure_retries ?? 2,
    });
    for (const group of await this.groups()) await store.setGroupStatus(group, 'complete');
    await store.updateEvaluation(evaluation.id, { summary, tasks: results });
  }

  private async groups(): Promise<string[]> {
    const page = await this.store.listGroups(this.runId, { limit: 1000 });
    return page.items.filter((g) => g.status === 'running').map((g) => g.id);
  }

  /** One group per task, `attempts` rollouts in it, each with its seed. */
  private async queue(tasks: Task[]): Promise<Slot[]> {
    const { store, runId, evaluation } = this;
    const slots: Slot[] = [];
    for (const task of tasks) {
      const group = await store.createGroup({
        run_id: runId,
        task_id: task.id,
        step: 0,
        size: evaluation.attempts,
      });
      for (let attempt = 0; attempt < evaluation.attempts; attempt++) {
        slots.push({
          task: { id: task.id, index: task.index, input: task.input },
          attempt,
          rollouts: [],
          group: group.id,
        });
      }
      await store.setGroupStatus(group.id, 'running');
    }
    await this.launch(slots);
    return slots;
  }

  /** A new rollout for each slot (its first, or a retry after an infrastructure failure). */
  private async launch(slots: Slot[]): Promise<void> {
    const created = await this.store.createRollouts(
      slots.map((s) => ({
        kind: 'run' as const,
        run_id: this.runId,
        group_id: s.group,
        task_id: s.task.id,
        input: s.task.input,
        max_attempts: 1, // the loop decides what is retried
      })),
    );
    created.forEach((rollout, i) => {
      const slot = slots[i]!;
      slot.rollouts.push(rollout.id);
      this.seeds.set(rollout.id, attemptSeed(this.evaluation.seed, slot.task.index, slot.attempt));
    });
  }

  /** An `evaluation_progress` event when the attempts' counts changed (a slot's earlier rollouts failed: it was retried). */
  private announceProgress(slots: Slot[], last: Map<Slot, RolloutStatus>): void {
    const statuses: RolloutStatus[] = [];
    for (const [slot, status] of last)
      statuses.push(status, ...slot.rollouts.slice(1).map(() => 'failed' as const));
    const ids = { evaluation_id: this.evaluation.id, run_id: this.runId };
    const progress = attemptProgress(ids, slots.length, statuses);
    const key = JSON.stringify(progress);
    if (key === this.announced) return;
    this.announced = key;
    this.store.announce({ type: 'evaluation_progress', progress });
  }

  /** Wait until every slot's last rollout is over; retry infrastructure failures while retries remain. */
  private async settle(slots: Slot[], retries: number): Promise<void> {
    const { harness } = this.config;
    const timeoutMs = harness.timeout_s * 1000 * (harness.reward === 'verifier' ? 2 : 1);
    for (;;) {
      this.check();
      const open = [];
      const retry: Slot[] = [];
      const last = new Map<Slot, RolloutStatus>();
      for (const slot of slots) {
        const rollout = await this.store.getRollout(slot.rollouts.at(-1)!);
        if (!rollout) continue;
        last.set(slot, rollout.status);
        if (!FINISHED_ROLLOUT.has(rollout.status)) open.push(rollout);
        else if (rollout.status !== 'succeeded' && slot.rollouts.length <= retries) {
          const attempt = (await this.store.listAttempts(rollout.id)).at(-1);
          if (attempt && failureOf(attempt).kind === 'infrastructure') retry.push(slot);
        }
      }
      if (retry.length) await this.launch(retry);
      for (const slot of retry) last.set(slot, 'queued');
      this.announceProgress(slots, last);
      if (open.length === 0 && retry.length === 0) return;
      await awaitRollouts(this.store, this.runId, open, timeoutMs, this.abort.signal);
    }
  }
}
