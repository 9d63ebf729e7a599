// A step's groups and rollouts in the store: creating a batch of groups for workers to claim, listing
// its rollouts, timing out attempts that run too long, closing the groups with their rewards, and
// cancelling a run's open work when it stops, fails or starts a step over.
import type { Group, Rollout, Task } from '../protocol/entities';
import { nextEvent, rolloutOf } from '../store/events';
import { type Store, StoreError } from '../store/store';

/** The groups one step (or one validation pass) sampled. */
export interface Batch {
  step: number;
  groups: Group[];
  startedAt: number;
  /** How many sampling rounds the groups came from (schedule.dynamic_sampling); absent: one. */
  rounds?: number;
}

/** Mean and (population) standard deviation; nulls for an empty list. */
export function meanStd(values: number[]): { mean: number | null; std: number | null } {
  if (values.length === 0) return { mean: null, std: null };
  const mean = values.reduce((a, b) => a + b, 0) / values.length;
  const variance = values.reduce((a, b) => a + (b - mean) ** 2, 0) / values.length;
  return { mean, std: Math.sqrt(variance) };
}

/** Create one group of `n` rollouts per task; workers claim them. */
export async function sampleBatch(
  store: Store,
  runId: string,
  step: number,
  tasks: Task[],
  n: number,
  attempts: { max_attempts: number; infrastructure_retries: number },
): Promise<Batch> {
  const groups: Group[] = [];
  const inputs = [];
  for (const task of tasks) {
    const group = await store.createGroup({ run_id: runId, task_id: task.id, step, size: n });
    groups.push(group);
    for (let i = 0; i < n; i++) {
      inputs.push({
        kind: 'run' as const,
        run_id: runId,
        group_id: group.id,
        task_id: task.id,
        input: task.input,
        max_attempts: attempts.max_attempts,
        infrastructure_retries: attempts.infrastructure_retries,
      });
    }
  }
  await store.createRollouts(inputs);
  for (const group of groups) await store.setGroupStatus(group.id, 'running');
  return { step, groups, startedAt: Date.now() };
}

/** Every rollout of the batch's groups. */
export async function rolloutsOf(store: Store, batch: Batch): Promise<Rollout[]> {
  const all: Rollout[] = [];
  for (const group of batch.groups) {
    let cursor: string | undefined;
    do {
      const page = await store.listRollouts({ group_id: group.id, cursor, limit: 1000 });
      all.push(...page.items);
      cursor = page.next_cursor ?? undefined;
    } while (cursor);
  }
  return all;
}

/** End as timed out the running attempts of open rollouts that started more than `timeoutMs` ago. */
async function timeOut(store: Store, open: Rollout[], timeoutMs: number): Promise<void> {
  const now = Date.now();
  for (const rollout of open) {
    if (rollout.status !== 'running') continue;
    if (rollout.started_at && now - Date.parse(rollout.started_at) < timeoutMs) continue;
    const attempt = (await store.listAttempts(rollout.id)).find((a) => a.status === 'running');
    if (!attempt || now - Date.parse(attempt.started_at) < timeoutMs) continue;
    try {
      await store.finishAttempt(attempt.id, 'timed_out', `no result after ${timeoutMs / 1000}s`);
    } catch (err) {
      if (!(err instanceof StoreError)) throw err;
    }
  }
}

/**
 * How a run's loop waits on its open rollouts: those past `timeoutMs` are timed out, then it waits for
 * a rollout of run `runId` to change, at most a quarter of the timeout (50 ms to 1 s), or for `signal`.
 */
export async function awaitRollouts(
  store: Store,
  runId: string,
  open: Rollout[],
  timeoutMs: number,
  signal: AbortSignal,
): Promise<void> {
  await timeOut(store, open, timeoutMs);
  await nextEvent(store, rolloutOf(runId), Math.min(1000, Math.max(50, timeoutMs / 4)), signal);
}

/**
 * Mark each group complete (a rollout of it succeeded and it was not dropped as incomplete), failed, or,
 * when `kept` names the groups the step trains on (schedule.dynamic_sampling), dropped if it is not one
 * of them; the rewards of the succeeded rollouts of the groups not dropped as incomplete.
 */
export async function closeGroups(
  store: Store,
  batch: Batch,
  rollouts: Rollout[],
  incomplete: ReadonlySet<string> = new Set(),
  kept?: ReadonlySet<string>,
): Promise<number[]> {
  const succeeded = rollouts.filter((r) => r.status === 'succeeded' && !incomplete.has(r.group_id ?? r.id));
  for (const group of batch.groups) {
    const ok = succeeded.some((r) => r.group_id === group.id);
    await store.setGroupStatus(
      group.id,
      !ok ? 'failed' : kept && !kept.has(group.id) ? 'dropped' : 'complete',
    );
  }
  return succeeded.map((r) => r.reward).filter((r): r is number => r !== null);
}

/** Cancel every queued or running rollout of a run. */
export async function cancelOpenRollouts(store: Store, runId: string): Promise<void> {
  for (const status of ['queued', 'running'] as const) {
    for (let round = 0; round < 1000; round++) {
      const page = await store.listRollouts({ run_id: runId, status, limit: 1000 });
      if (page.items.length === 0) break;
      for (const rollout of page.items) {
        try {
          await store.cancelRollout(rollout.id);
        } catch (err) {
          if (!(err instanceof StoreError)) throw err;
        }
      }
    }
  }
}

/**
 * Mark every open group of a run cancelled: its step will not finish (the run stopped or failed, or a
 * restarted daemon starts the step over with new groups). Without this they would say "running" forever.
 */
async function cancelOpenGroups(store: Store, runId: string): Promise<void> {
  const open: string[] = [];
  let cursor: string | undefined;
  do {
    const page = await store.listGroups(runId, { cursor, limit: 1000 });
    open.push(...page.items.filter((g) => g.status === 'pending' || g.status === 'running').map((g) => g.id));
    cursor = page.next_cursor ?? undefined;
  } while (cursor);
  for (const id of open) await store.setGroupStatus(id, 'cancelled');
}

/** Cancel a run's open rollouts, then their groups. */
export async function cancelOpenWork(store: Store, runId: string): Promise<void> {
  await cancelOpenRollouts(store, runId);
  await cancelOpenGroups(store, runId);
}
