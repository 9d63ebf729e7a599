// The run's sampling replaces the harness's own on training calls; the record reads what was sent.
import { describe, expect, it } from 'vitest';
import { AlgorithmConfig, NEUTRAL_SAMPLING, runSampling } from '../protocol/algorithm';
import { callSampling, withRunSampling } from './sampling';

describe('sampling of a training call', () => {
  it('replaces every value that changes the distribution, keeps seed and max_tokens, and names what it replaced', () => {
    const harness = {
      model: 'm',
      temperature: 0.6,
      top_k: 20,
      top_p: 0.95,
      seed: 3,
      max_tokens: 9,
      min_p: 0,
    };
    const { body, plan } = withRunSampling(harness, runSampling({}));
    expect(body).toEqual({ model: 'm', seed: 3, max_tokens: 9, ...NEUTRAL_SAMPLING });
    expect(plan).toEqual({ source: 'run', overridden: { temperature: 0.6, top_k: 20, top_p: 0.95 } });
    expect(harness.temperature).toBe(0.6); // the harness's body is not changed in place
  });

  it('top_k -1 and 0 both mean no truncation: not an override', () => {
    expect(withRunSampling({ top_k: -1 }, runSampling({})).plan.overridden).toBeNull();
  });

  it('reads the effective limit of whichever wire the body is in', () => {
    const plan = { source: 'request' as const, overridden: null };
    expect(callSampling({ max_completion_tokens: 5, max_tokens: 7 }, plan).max_tokens).toBe(5);
    expect(callSampling({ max_output_tokens: 11 }, plan).max_tokens).toBe(11);
    expect(callSampling({ temperature: 'hot' }, plan).temperature).toBeNull();
  });
});

describe('algorithm.sampling in a run config', () => {
  it('is neutral when unset, and reads the older algorithm.temperature', () => {
    expect(runSampling(AlgorithmConfig.parse({}))).toEqual(NEUTRAL_SAMPLING);
    expect(runSampling(AlgorithmConfig.parse({ temperature: 0.7 })).temperature).toBe(0.7);
    expect(runSampling(AlgorithmConfig.parse({ sampling: { top_p: 0.9 } }))).toMatchObject({
      top_p: 0.9,
      top_k: 0,
    });
  });

  it('constrained is record unless the run says refuse, and nothing else', () => {
    expect(AlgorithmConfig.parse({}).sampling?.constrained).toBeUndefined();
    expect(AlgorithmConfig.parse({ sampling: { constrained: 'refuse' } }).sampling?.constrained).toBe(
      'refuse',
    );
    expect(AlgorithmConfig.safeParse({ sampling: { constrained: 'drop' } }).error?.issues[0].path).toEqual([
      'sampling',
      'constrained',
    ]);
  });

  it('refuses a temperature of 0 and two temperatures that disagree, naming the field', () => {
    const zero = AlgorithmConfig.safeParse({ sampling: { temperature: 0 } });
    expect(zero.success).toBe(false);
    expect(zero.error?.issues[0].path).toEqual(['sampling', 'temperature']);
    const both = AlgorithmConfig.safeParse({ temperature: 0.7, sampling: { temperature: 1 } });
    expect(both.error?.issues[0]).toMatchObject({ path: ['temperature'] });
  });
});
