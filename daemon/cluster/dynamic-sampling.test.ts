import { describe, expect, it } from 'vitest';
import type { Group, Rollout } from '../protocol/entities';
import { informativeGroups, keepInformative, mergeBatches } from './dynamic-sampling';

const rollout = (id: string, group: string, reward: number | null): Rollout =>
  ({ id, group_id: group, reward, status: 'succeeded' }) as Rollout;
const group = (id: string): Group => ({ id }) as Group;

describe('dynamic sampling', () => {
  const train = [
    rollout('a1', 'a', 1),
    rollout('a2', 'a', 1),
    rollout('b1', 'b', 0),
    rollout('b2', 'b', 1),
    rollout('c1', 'c', 0.5),
    rollout('c2', 'c', null),
    rollout('d1', 'd', 1),
    rollout('d2', 'd', 0),
  ];

  it('a group is informative when two of its rewards differ (a single reward is not)', () => {
    expect([...informativeGroups(train)].sort()).toEqual(['b', 'd']);
  });

  it('keeps the first informative groups in the batch order and counts the rounds', () => {
    const one = { step: 0, groups: [group('d'), group('a')], startedAt: 1 };
    const two = { step: 0, groups: [group('b'), group('c')], startedAt: 2 };
    const batch = mergeBatches(one, two);
    expect(batch).toMatchObject({ startedAt: 1, rounds: 2 });
    const kept = keepInformative(batch, train, 1);
    expect(kept.train.map((r) => r.id)).toEqual(['a1', 'a2', 'c1', 'c2', 'd1', 'd2']);
    expect([...kept.kept]).toEqual(['d']);
    expect(kept.metrics).toEqual({
      sampling_rounds: 2,
      sampled_groups: 4,
      informative_groups: 2,
      kept_groups: 1,
    });
    expect(keepInformative(batch, train, 4).train).toHaveLength(8);
    expect([...keepInformative(batch, train, 4).kept]).toEqual(['d', 'b']);
  });
});
