import { describe, expect, it } from 'vitest';
import { countStep, progressText } from './progress';

describe("a step's progress", () => {
  it('counts finished (succeeded, failed, cancelled), running and queued rollouts, failed named', () => {
    const p = countStep('run_1', 3, ['succeeded', 'failed', 'running', 'queued', 'queued', 'cancelled']);
    expect(p).toEqual({ run_id: 'run_1', step: 3, total: 6, queued: 2, running: 1, finished: 3, failed: 1 });
    expect(progressText(p)).toBe('step 3: 3 of 6 rollouts finished · 1 failed · 1 running · 2 queued');
    expect(progressText(countStep('run_1', 0, ['succeeded', 'succeeded']))).toBe(
      'step 0: 2 of 2 rollouts finished',
    );
  });
});
