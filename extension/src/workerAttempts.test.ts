// The Nodes view's attempts under a worker, kept live from 'rollout' events (workerAttempts.ts).
import { describe, expect, it } from 'vitest';
import type { Attempt } from '../../daemon/protocol/entities';
import { type AttemptSource, WorkerAttempts } from './workerAttempts';

const attempt = (rollout: string, index: number, worker: string, second: number): Attempt => ({
  id: `att_${rollout}_${index}`,
  rollout_id: rollout,
  index,
  status: 'running',
  worker,
  error: null,
  failure: null,
  started_at: `2026-12-07T03:00:${String(second).padStart(2, '0')}.000Z`,
  heartbeat_at: `2026-12-07T03:00:${String(second).padStart(2, '0')}.000Z`,
  finished_at: null,
});

/** The daemon's rollouts as the view reads them, and what it was asked. */
function daemon(initial: Attempt[]) {
  const byRollout = new Map<string, Attempt[]>();
  for (const a of initial) byRollout.set(a.rollout_id, [...(byRollout.get(a.rollout_id) ?? []), a]);
  const reads: string[] = [];
  const source: AttemptSource = {
    recent: async (runId) => {
      reads.push(`recent ${runId}`);
      return [...byRollout.values()].flat();
    },
    rollout: async (id) => {
      reads.push(id);
      return byRollout.get(id) ?? null;
    },
  };
  return { byRollout, reads, source };
}

describe('attempts under a worker in the Nodes view', () => {
  it('a new attempt appears under its worker after its rollout event, without a refresh', async () => {
    const d = daemon([attempt('ro_1', 1, 'w0', 1)]);
    let redraws = 0;
    const live = new WorkerAttempts(d.source, () => redraws++, 20);
    expect((await live.of('run_1', 'w0')).map((a) => a.id)).toEqual(['att_ro_1_1']);
    // the worker claims a second rollout (the daemon emits its 'rollout' event), then the first finishes
    d.byRollout.set('ro_2', [attempt('ro_2', 1, 'w0', 5)]);
    d.byRollout.set('ro_1', [{ ...attempt('ro_1', 1, 'w0', 1), status: 'succeeded' }]);
    live.onRollout({ id: 'ro_2', run_id: 'run_1' });
    for (let i = 0; i < 10; i++) live.onRollout({ id: 'ro_1', run_id: 'run_1' });
    await expect.poll(() => redraws).toBe(1);
    const shown = await live.of('run_1', 'w0');
    expect(shown.map((a) => [a.id, a.status])).toEqual([
      ['att_ro_2_1', 'running'],
      ['att_ro_1_1', 'succeeded'],
    ]);
    // throttled: one batch read each changed rollout once; the run's list was read once
    expect(d.reads).toEqual(['recent run_1', 'ro_2', 'ro_1']);
    live.dispose();
  });

  it("ignores rollouts of runs whose workers were not opened, and reads a dropped run's attempts again", async () => {
    const d = daemon([attempt('ro_1', 1, 'w0', 1)]);
    let redraws = 0;
    const live = new WorkerAttempts(d.source, () => redraws++, 20);
    live.onRollout({ id: 'ro_9', run_id: 'run_other' });
    live.onRollout({ id: 'ro_8', run_id: null });
    await new Promise((r) => setTimeout(r, 60));
    expect(redraws).toBe(0);
    expect(d.reads).toEqual([]);
    await live.of('run_1', 'w0');
    live.drop('run_1');
    d.byRollout.set('ro_3', [attempt('ro_3', 1, 'w1', 9)]);
    expect((await live.of('run_1', 'w1')).map((a) => a.id)).toEqual(['att_ro_3_1']);
    expect(d.reads).toEqual(['recent run_1', 'recent run_1']);
    live.dispose();
  });
});
