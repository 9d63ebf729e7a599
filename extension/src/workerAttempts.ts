// The recent attempts under each worker in the Nodes view, kept live: a run's attempts are read once
// (its newest rollouts), then each 'rollout' event of that run marks the rollout changed and, at most
// once per `ms`, the changed rollouts are read again in one batch and merged. No VS Code API here.
import type { Attempt } from '../../daemon/protocol/entities';
import { attemptsByWorker } from './workerLabels';

export interface AttemptSource {
  /** The attempts of a run's newest rollouts. */
  recent(runId: string): Promise<Attempt[]>;
  /** One rollout's attempts (null: it is gone). */
  rollout(rolloutId: string): Promise<Attempt[] | null>;
}

/** Attempts kept per run (the oldest are dropped beyond it), and rollouts read per batch at most. */
const KEPT_PER_RUN = 400;
const READ_PER_BATCH = 40;

export class WorkerAttempts {
  /** By run: its attempts by id, once read. */
  private readonly runs = new Map<string, Promise<Map<string, Attempt>>>();
  /** By run: rollouts changed since they were read. */
  private readonly changed = new Map<string, Set<string>>();
  private timer: ReturnType<typeof setTimeout> | undefined;

  constructor(
    private readonly source: AttemptSource,
    /** The attempts of some run changed: the view redraws (and asks `of` again). */
    private readonly onChange: () => void,
    private readonly ms = 1000,
  ) {}

  /** The worker's recent attempts, newest first. */
  async of(runId: string, worker: string): Promise<Attempt[]> {
    let run = this.runs.get(runId);
    if (!run) {
      run = this.source.recent(runId).then((list) => new Map(list.map((a) => [a.id, a])));
      this.runs.set(runId, run);
      run.catch(() => this.runs.delete(runId));
    }
    return attemptsByWorker([...(await run).values()]).get(worker) ?? [];
  }

  /** A rollout changed (claimed, finished, retried): read it again soon, if its run is shown. */
  onRollout(rollout: { id: string; run_id: string | null }): void {
    if (!rollout.run_id || !this.runs.has(rollout.run_id)) return;
    const ids = this.changed.get(rollout.run_id) ?? new Set<string>();
    ids.add(rollout.id);
    this.changed.set(rollout.run_id, ids);
    this.timer ??= setTimeout(() => void this.flush(), this.ms);
  }

  /** Forget a run's attempts (read again when next asked). */
  drop(runId: string): void {
    this.runs.delete(runId);
    this.changed.delete(runId);
  }

  clear(): void {
    this.runs.clear();
    this.changed.clear();
  }

  private async flush(): Promise<void> {
    const batch = [...this.changed];
    this.changed.clear();
    let any = false;
    for (const [runId, ids] of batch) {
      const run = this.runs.get(runId);
      if (!run) continue;
      const read = [...ids].slice(-READ_PER_BATCH);
      const fresh = await Promise.all(read.map((id) => this.source.rollout(id).catch(() => null)));
      const attempts = await run.catch(() => null);
      if (!attempts || this.runs.get(runId) !== run) continue; // dropped meanwhile
      for (const [i, id] of read.entries()) {
        for (const [key, a] of attempts) if (a.rollout_id === id) attempts.delete(key);
        for (const a of fresh[i] ?? []) attempts.set(a.id, a);
      }
      trim(attempts);
      any = true;
    }
    this.timer = undefined;
    if (this.changed.size > 0) this.timer = setTimeout(() => void this.flush(), this.ms);
    if (any) this.onChange();
  }

  dispose(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.clear();
  }
}

function trim(attempts: Map<string, Attempt>): void {
  if (attempts.size <= KEPT_PER_RUN) return;
  const oldest = [...attempts.values()].sort((a, b) => a.started_at.localeCompare(b.started_at));
  for (const a of oldest.slice(0, attempts.size - KEPT_PER_RUN)) attempts.delete(a.id);
}
