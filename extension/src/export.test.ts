import { describe, expect, it } from 'vitest';
import type { RolloutDetail } from '../../daemon/protocol/api';
import type { Group, Run } from '../../daemon/protocol/entities';
import { SampleJson } from '../../daemon/protocol/samples';
import type { DaemonClient } from './client';
import { exportSamples, samplesJsonl } from './export';
import { syntheticRollout } from './fixture';

describe('Export samples', () => {
  it('writes the samples stage output: one valid SampleJson per line and a summary line', () => {
    const a = syntheticRollout();
    const b = { ...syntheticRollout(), id: 'ro_b', reward: 0 };
    const { text, samples } = samplesJsonl({ algorithm: { advantage: 'grpo' } }, [a, b]);
    const lines = text
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(samples).toBe(4); // each rollout: two samples around its prefix break
    for (const l of lines.slice(0, -1)) expect(SampleJson.safeParse(l).success).toBe(true);
    expect(lines.at(-1).summary).toMatchObject({
      trajectories: 2,
      samples: 4,
      prefix_breaks: 2,
      excluded: 0,
    });
    const adv = lines.find((l) => l.rollout_id === 'ro_b').advantages.find((x: number) => x !== 0);
    expect(adv).toBeLessThan(0);
  });

  it("drops zero-variance groups when the run's schedule has dynamic_sampling (which implies it)", () => {
    const a = syntheticRollout();
    const b = { ...syntheticRollout(), id: 'ro_b' };
    expect(samplesJsonl({}, [a, b]).samples).toBe(4);
    expect(samplesJsonl({ schedule: { dynamic_sampling: { max_rounds: 2 } } }, [a, b]).samples).toBe(0);
  });

  it('exports only the groups its steps trained on (closed complete), asking for no other rollout', async () => {
    const rollout = (id: string, group: string, reward: number): RolloutDetail => ({
      ...syntheticRollout(),
      id,
      group_id: group,
      reward,
    });
    const rollouts = [
      rollout('ro_a', 'gr_kept', 1),
      rollout('ro_b', 'gr_kept', 0),
      rollout('ro_c', 'gr_surplus', 1), // dynamic sampling had enough informative groups
      rollout('ro_d', 'gr_surplus', 0),
      rollout('ro_e', 'gr_incomplete', 1), // lost a rollout, incomplete_groups: drop
      rollout('ro_f', 'gr_open', 1), // a step still sampling
    ];
    const statuses: Record<string, Group['status']> = {
      gr_kept: 'complete',
      gr_surplus: 'dropped',
      gr_incomplete: 'failed',
      gr_open: 'running',
    };
    const fetched: string[] = [];
    const client = {
      runGroups: async () => ({
        items: Object.entries(statuses).map(([id, status]) => ({ id, status }) as Group),
        next_cursor: null,
      }),
      listRollouts: async () => ({ items: rollouts, next_cursor: null }),
      getRollout: async (id: string) => {
        fetched.push(id);
        return rollouts.find((r) => r.id === id)!;
      },
    } as unknown as DaemonClient;
    const run = { id: 'run_fixture', config: { algorithm: { advantage: 'grpo' } } } as unknown as Run;
    const { text, lines } = await exportSamples(client, run, () => {});
    expect(fetched).toEqual(['ro_a', 'ro_b']);
    expect(lines).toBe(4);
    expect(JSON.parse(text.trim().split('\n').at(-1)!).summary).toMatchObject({ trajectories: 2 });
  });
});
