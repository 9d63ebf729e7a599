// Run config checks that keep a setting from silently doing nothing.
import { describe, expect, it } from 'vitest';
import { HarnessConfig, RunConfig } from './config';

const ray = { ray: { address: 'http://127.0.0.1:8265' } };

describe('harness config', () => {
  it('takes a persistent harness on Ray workers (the Python workers run it, workers/python persistent.py) and on the daemon workers', () => {
    const parsed = HarnessConfig.safeParse({ command: ['node', 'h.mjs'], mode: 'persistent', workers: ray });
    expect(parsed.success, JSON.stringify(parsed.error?.issues)).toBe(true);
    expect(parsed.data?.mode).toBe('persistent');
    expect(HarnessConfig.safeParse({ command: ['node', 'h.mjs'], mode: 'persistent' }).success).toBe(true);
  });

  it('takes a spawned harness on Ray workers', () => {
    expect(HarnessConfig.safeParse({ command: ['node', 'h.mjs'], workers: ray }).success).toBe(true);
  });
});

describe('schedule.dynamic_sampling', () => {
  const run = (schedule: unknown, n = 2) =>
    RunConfig.safeParse({ name: 'r', tasks: { file: 't.jsonl' }, algorithm: { n }, schedule });

  it('is off by default; on, it bounds the extra rounds (3 unless set, at least 1)', () => {
    expect(run({}).data?.schedule.dynamic_sampling).toBeUndefined();
    expect(run({ dynamic_sampling: {} }).data?.schedule.dynamic_sampling).toEqual({ max_rounds: 3 });
    expect(run({ dynamic_sampling: { max_rounds: 5 } }).data?.schedule.dynamic_sampling).toEqual({
      max_rounds: 5,
    });
    const zero = run({ dynamic_sampling: { max_rounds: 0 } });
    expect(zero.error?.issues[0].path).toEqual(['schedule', 'dynamic_sampling', 'max_rounds']);
    expect(run({ dynamic_sampling: { rounds: 2 } }).success).toBe(false);
  });

  it('is refused with groups of one rollout (never informative), naming the field and algorithm.n', () => {
    const one = run({ dynamic_sampling: {} }, 1);
    expect(one.error?.issues[0].path).toEqual(['schedule', 'dynamic_sampling']);
    expect(one.error?.issues[0].message).toContain('algorithm.n is 1');
    expect(run({ dynamic_sampling: {} }, 2).success).toBe(true);
    expect(run({}, 1).success).toBe(true);
  });
});
