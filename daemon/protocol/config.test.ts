// Run config checks that keep a setting from silently doing nothing.
import { describe, expect, it } from 'vitest';
import { HarnessConfig, RunConfig } from './config';
import { PolicyLossConfig, policyLossOf } from './training';

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

describe('algorithm.policy_loss', () => {
  const run = (algorithm: Record<string, unknown>) =>
    RunConfig.safeParse({ name: 'r', tasks: { file: 't.jsonl' }, algorithm });

  it('is ppo by default; cispo keeps clip_low and clip_high (its IS weight bounds) and tis_cap', () => {
    expect(run({}).data?.algorithm.policy_loss).toBe('ppo');
    const cispo = run({ policy_loss: 'cispo', clip_low: 10, clip_high: 0.2, tis_cap: null });
    expect(cispo.success, JSON.stringify(cispo.error?.issues)).toBe(true);
    expect(cispo.data?.algorithm).toMatchObject({ policy_loss: 'cispo', clip_low: 10, clip_high: 0.2 });
    expect(run({ policy_loss: 'reinforce' }).error?.issues[0].path).toEqual(['algorithm', 'policy_loss']);
  });

  it('cispo refuses dual_clip and policy_ratio sequence, naming the field', () => {
    const dual = run({ policy_loss: 'cispo', dual_clip: 3 });
    expect(dual.error?.issues.map((i) => i.path)).toEqual([['algorithm', 'dual_clip']]);
    expect(dual.error?.issues[0].message).toContain('policy_loss cispo');
    const gspo = run({ policy_loss: 'cispo', policy_ratio: 'sequence' });
    expect(gspo.error?.issues.map((i) => i.path)).toEqual([['algorithm', 'policy_ratio']]);
    expect(gspo.error?.issues[0].message).toContain('policy_loss cispo');
    expect(run({ dual_clip: 3, policy_ratio: 'sequence' }).success).toBe(true);
  });
});

describe("the trainer's loss settings", () => {
  it('carry every PolicyLossConfig field from the run config (policy_loss and policy_ratio included)', () => {
    const parsed = RunConfig.parse({
      name: 'r',
      tasks: { file: 't.jsonl' },
      algorithm: { policy_loss: 'cispo', clip_low: 10, clip_high: 0.2, tis_cap: null, kl_coef: 0.01 },
    });
    const loss = policyLossOf(parsed.algorithm);
    expect(PolicyLossConfig.parse(loss)).toEqual(loss);
    for (const key of Object.keys(PolicyLossConfig.shape))
      expect(loss[key as keyof typeof loss], key).toBe(
        parsed.algorithm[key as keyof typeof parsed.algorithm],
      );
    expect(loss).toMatchObject({ policy_loss: 'cispo', policy_ratio: 'token', clip_low: 10, tis_cap: null });
  });
});
