// A sample carries the temperature its calls sampled at (the trainer divides its logits by it), and a
// merge never joins calls sampled at different temperatures (spec/samples.md, the per-token loss).
import { describe, expect, it } from 'vitest';
import { NEUTRAL_SAMPLING } from '../protocol/algorithm';
import type { LlmCall } from '../protocol/entities';
import { storedCall } from '../store/test-calls';
import { buildSamples, type TrajectoryArrays } from './build';
import { trajectoryFromCalls } from './index';
import { parseTrajectoryLine, toSampleJson, trajectoryArrays } from './jsonl';

const opts = { merge: 'exact', advantage: 'reinforce', loss_agg: 'token-mean' } as const;
const call = (p: number[], r: number[], temperature: number | null) => ({
  prompt_ids: p,
  response_ids: r,
  response_logprobs: r.map(() => -0.5),
  temperature,
});
const traj = (calls: ReturnType<typeof call>[]): TrajectoryArrays => ({
  rollout_id: 'r1',
  group_id: 'g1',
  reward: 1,
  calls,
});

describe('temperature of samples', () => {
  it('calls at one temperature merge into one sample that carries it', () => {
    const built = buildSamples([traj([call([1, 2], [3], 0.7), call([1, 2, 3, 4], [5], 0.7)])], opts);
    expect(built.samples).toHaveLength(1);
    expect(built.samples[0].temperature).toBe(0.7);
    expect(toSampleJson(built.samples[0]).temperature).toBe(0.7);
    expect(built.summary.temperature_breaks).toBe(0);
  });

  it('a call at another temperature starts a new sample although its prompt extends the sequence, and the break is counted', () => {
    const built = buildSamples(
      [traj([call([1, 2], [3], 1), call([1, 2, 3, 4], [5], 0.6), call([1, 2, 3, 4, 5, 6], [7], 0.6)])],
      opts,
    );
    expect(built.samples.map((s) => [Array.from(s.input_ids), s.temperature])).toEqual([
      [[1, 2, 3], 1],
      [[1, 2, 3, 4, 5, 6, 7], 0.6],
    ]);
    expect(built.summary).toMatchObject({ temperature_breaks: 1, prefix_breaks: 0 });
  });

  it('an unknown temperature (a call recorded before sampling was) is not merged with a known one, and leaves the sample without one (= 1)', () => {
    const built = buildSamples([traj([call([1], [2], null), call([1, 2, 3], [4], 1)])], opts);
    expect(built.samples.map((s) => s.temperature)).toEqual([undefined, 1]);
    expect(built.summary.temperature_breaks).toBe(1);
    expect(toSampleJson(built.samples[0])).not.toHaveProperty('temperature');
  });

  it("a stored rollout's calls give their recorded temperature to the trajectory", () => {
    const sampling = (temperature: number | null): LlmCall['sampling'] => ({
      ...NEUTRAL_SAMPLING,
      temperature,
      seed: null,
      max_tokens: null,
      source: 'run',
      overridden: null,
    });
    const t = trajectoryFromCalls({ id: 'r1', group_id: 'g1', reward: 1 }, [
      storedCall({ sampling: sampling(0.8) }),
      storedCall({ sampling: null }),
    ]);
    expect(t.calls.map((c) => c.temperature)).toEqual([0.8, null]);
  });

  it('a trajectory line may give each call its temperature; samples carry it', () => {
    const line = JSON.stringify({
      rollout_id: 'r1',
      group_id: 'g1',
      reward: 1,
      calls: [{ prompt_ids: [1], response_ids: [2], temperature: 0.5 }],
    });
    const parsed = parseTrajectoryLine(line, 1);
    if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
    const built = buildSamples([trajectoryArrays(parsed.value)], opts);
    expect(toSampleJson(built.samples[0]).temperature).toBe(0.5);
    const bad = parseTrajectoryLine(line.replace('0.5', '0'), 1);
    expect(bad.ok ? null : bad.errors[0].field).toBe('calls[0].temperature');
  });
});
