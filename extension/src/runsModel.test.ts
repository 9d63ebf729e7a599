import { describe, expect, it } from 'vitest';
import type { Group } from '../../daemon/protocol/entities';
import { PagedList } from './paging';
import {
  filterText,
  groupsByStep,
  latestRollout,
  matchesFilter,
  stepDescription,
  stepStatus,
  usesDynamicSampling,
} from './runsModel';

const group = (id: string, step: number, status: Group['status'] = 'complete'): Group => ({
  id,
  run_id: 'run_1',
  task_id: null,
  step,
  size: 2,
  status,
  created_at: '2026-01-01T00:00:00Z',
});

describe('a run by steps', () => {
  it('120 groups of 30 steps open as 30 step rows, newest step first, none lost', () => {
    const groups = Array.from({ length: 120 }, (_, i) =>
      group(`g${String(i).padStart(3, '0')}`, Math.floor(i / 4)),
    );
    const steps = groupsByStep([...groups].reverse());
    expect(steps).toHaveLength(30);
    expect(steps.map((s) => s.step)).toEqual(Array.from({ length: 30 }, (_, i) => 29 - i));
    expect(steps.every((s) => s.groups.length === 4 && s.groups.every((g) => g.step === s.step))).toBe(true);
    expect(steps.flatMap((s) => s.groups.map((g) => g.id)).sort()).toEqual(groups.map((g) => g.id));
  });

  it('live group events: a new step appears first, a status change stays in its step', async () => {
    const list = new PagedList<Group>(async () => ({
      items: [group('g1', 0, 'running')],
      next_cursor: null,
    }));
    await list.ensure();
    expect(list.upsert(group('g2', 1, 'pending'))).toBe(true);
    expect(groupsByStep(list.items).map((s) => [s.step, s.groups.map((g) => g.id)])).toEqual([
      [1, ['g2']],
      [0, ['g1']],
    ]);
    expect(list.upsert(group('g1', 0, 'complete'))).toBe(true);
    const steps = groupsByStep(list.items);
    expect(steps.map((s) => stepStatus(s.groups))).toEqual(['running', 'complete']);
    expect(list.items).toHaveLength(2);
  });

  it('a step runs while any group is open, and says how many', () => {
    const open = [group('a', 1, 'running'), group('b', 1), group('c', 1, 'failed')];
    expect(stepStatus(open)).toBe('running');
    expect(stepDescription(open)).toBe('3 groups · 1 running · 1 failed');
    expect(stepStatus([group('a', 1)])).toBe('complete');
    expect(stepDescription([group('a', 1)])).toBe('1 group · complete');
    expect(stepStatus([group('a', 1, 'failed')])).toBe('failed');
  });

  it('a step the run stopped in (or a restarted daemon began again) says cancelled, not running', () => {
    const stopped = [group('a', 1, 'cancelled'), group('b', 1, 'cancelled')];
    expect(stepStatus(stopped)).toBe('cancelled');
    expect(stepDescription(stopped)).toBe('2 groups · 2 cancelled');
    expect(stepDescription([group('a', 1), group('b', 1, 'cancelled')])).toBe('2 groups · 1 cancelled');
  });

  it('with dynamic sampling a finished step says how many groups it kept of those it sampled', () => {
    const dynamicSampling = usesDynamicSampling({ schedule: { dynamic_sampling: { max_rounds: 3 } } });
    expect(dynamicSampling).toBe(true);
    expect(usesDynamicSampling({ schedule: { steps: 3 } })).toBe(false);
    expect(usesDynamicSampling(null)).toBe(false);
    const step = [group('a', 0, 'dropped'), group('b', 0), group('c', 0), group('d', 0, 'dropped')];
    expect(stepDescription(step, { dynamicSampling })).toBe('kept 2 of 4 groups');
    expect(stepStatus(step)).toBe('complete');
    // a restarted step: the interrupted round's groups are not counted as sampled
    const restarted = [
      group('a', 0, 'cancelled'),
      group('b', 0),
      group('c', 0, 'failed'),
      group('d', 0, 'dropped'),
    ];
    expect(stepDescription(restarted, { dynamicSampling })).toBe(
      'kept 1 of 3 groups · 1 failed · 1 cancelled',
    );
    // kept none: the step trained on nothing
    const none = [group('a', 0, 'dropped'), group('b', 0, 'dropped')];
    expect(stepDescription(none, { dynamicSampling })).toBe('kept 0 of 2 groups');
    expect(stepStatus(none)).toBe('dropped');
    // still sampling (its groups close together when the step ends): as without it
    const sampling = [group('a', 0, 'running'), group('b', 0, 'running')];
    expect(stepDescription(sampling, { dynamicSampling })).toBe('2 groups · 2 running');
    expect(stepDescription(step)).toBe('4 groups · complete');
  });

  it('a finished rollout never goes back to queued when an older snapshot arrives later', () => {
    const queued = { id: 'r1', status: 'queued', updated_at: '2026-01-01T00:00:01.000Z' };
    const done = { id: 'r1', status: 'succeeded', updated_at: '2026-01-01T00:00:09.500Z' };
    expect(latestRollout(queued, done)).toBe(done);
    expect(latestRollout(done, queued)).toBe(done);
    expect(latestRollout(undefined, queued)).toBe(queued);
  });
});

describe('the rollout filter', () => {
  it('matches status and reward bounds as the daemon does; no reward fails a bound', () => {
    const f = { status: 'succeeded' as const, min_reward: 0.5 };
    expect(filterText(f)).toBe('status=succeeded, reward≥0.5');
    expect(matchesFilter({ status: 'succeeded', reward: 0.5 }, f)).toBe(true);
    expect(matchesFilter({ status: 'succeeded', reward: 0.4 }, f)).toBe(false);
    expect(matchesFilter({ status: 'failed', reward: 1 }, f)).toBe(false);
    expect(matchesFilter({ status: 'succeeded', reward: null }, f)).toBe(false);
    expect(matchesFilter({ status: 'running', reward: null }, {})).toBe(true);
    expect(matchesFilter({ status: 'running', reward: 2 }, { max_reward: 1 })).toBe(false);
  });
});
