import { describe, expect, it } from 'vitest';
import { SampleJson } from '../../daemon/protocol/samples';
import { samplesJsonl } from './export';
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
});
