// An evaluation's attempt counts from its rollouts' statuses: a retried rollout is no failed attempt.
import { describe, expect, it } from 'vitest';
import { attemptProgress } from './progress';

const ids = { evaluation_id: 'ev_1', run_id: 'run_1' };

describe('attemptProgress', () => {
  it('counts each slot once: retried rollouts go to `retried`, not to failed attempts', () => {
    // 4 slots; one failed rollout was retried (its retry runs): 5 rollouts
    const p = attemptProgress(ids, 4, ['succeeded', 'failed', 'running', 'failed', 'queued']);
    expect(p).toEqual({
      ...ids,
      total: 4,
      queued: 1,
      running: 1,
      finished: 2,
      succeeded: 1,
      failed: 1,
      retried: 1,
    });
  });

  it('slots whose rollouts are not created yet are queued', () => {
    expect(attemptProgress(ids, 3, ['running'])).toMatchObject({
      total: 3,
      queued: 2,
      running: 1,
      finished: 0,
    });
  });

  it('cancelled attempts count as failed', () => {
    expect(attemptProgress(ids, 2, ['cancelled', 'succeeded'])).toMatchObject({ finished: 2, failed: 1 });
  });
});
