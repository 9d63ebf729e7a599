import { describe, expect, it } from 'vitest';
import type { RunMetrics } from '../../protocol/entities';
import { dynamicSampling } from './run';

const row = (step: number, metrics: Record<string, number | null>): RunMetrics => ({
  run_id: 'run_1',
  step,
  metrics,
  created_at: '2026-12-07T00:00:00.000Z',
});

describe('harness-rl run show', () => {
  it("sums dynamic sampling's figures over the steps that have them, with the mean rounds per step", () => {
    const rows = [
      row(0, { sampling_rounds: 1, sampled_groups: 4, informative_groups: 4, kept_groups: 4 }),
      row(1, { loss: 0.5, recovered: 1 }), // a step the trainer had applied before a restart: no figures
      row(2, { sampling_rounds: 4, sampled_groups: 16, informative_groups: 0, kept_groups: 0 }),
    ];
    expect(dynamicSampling(rows)).toEqual({
      steps: 2,
      sampling_rounds: 5,
      sampled_groups: 20,
      informative_groups: 4,
      kept_groups: 4,
      mean_sampling_rounds: 2.5,
      steps_without_kept_groups: 1,
    });
  });

  it('has no dynamic sampling summary for a run without it', () => {
    expect(dynamicSampling([row(0, { loss: 1 })])).toBeNull();
    expect(dynamicSampling([])).toBeNull();
  });
});
