// The evaluation statistics against hand-computed values: pass@k's unbiased estimator, a seeded
// bootstrap that repeats itself, the exact sign test, and failures sorted into whose fault they were.
import { describe, expect, it } from 'vitest';
import { compareEvaluations } from './compare';
import { failureOf } from './failures';
import { bootstrapMean, passAtK, signTest } from './stats';

describe('pass@k', () => {
  it('is 1 − C(n−c, k)/C(n, k)', () => {
    expect(passAtK(5, 2, 1)).toBeCloseTo(0.4, 12);
    expect(passAtK(5, 2, 2)).toBeCloseTo(1 - 3 / 10, 12);
    expect(passAtK(10, 1, 5)).toBeCloseTo(0.5, 12);
    expect(passAtK(4, 0, 4)).toBe(0);
    expect(passAtK(4, 3, 2)).toBe(1);
  });
  it('with k above the attempts made, counts every attempt', () => {
    expect(passAtK(2, 1, 5)).toBe(1);
    expect(passAtK(0, 0, 1)).toBe(0);
  });
});

describe('bootstrap interval of a mean', () => {
  it('the same seed gives the same interval, around the mean', () => {
    const xs = Array.from({ length: 40 }, (_, i) => (i % 4 === 0 ? 1 : 0.3 * (i % 3)));
    const a = bootstrapMean(xs, 3);
    expect(bootstrapMean(xs, 3)).toEqual(a);
    const m = xs.reduce((s, x) => s + x, 0) / xs.length;
    expect(a.low).toBeLessThan(m);
    expect(a.high).toBeGreaterThan(m);
    expect(bootstrapMean(xs, 4)).not.toEqual(a);
  });
  it('a constant sample has a zero-width interval', () => {
    expect(bootstrapMean([0.5, 0.5, 0.5], 0)).toMatchObject({ low: 0.5, high: 0.5 });
  });
});

describe('sign test', () => {
  it('8 wins and no loss: p = 2 · 2⁻⁸; ties are dropped', () => {
    expect(signTest([1, 1, 1, 1, 1, 1, 1, 1, 0, 0]).p).toBeCloseTo(2 / 256, 12);
    expect(signTest([1, 1, 1, 1, 1, 1, 1, 1, 0, 0])).toMatchObject({ wins: 8, losses: 0, ties: 2 });
  });
  it('balanced wins and losses are not significant', () => {
    expect(signTest([1, -1, 1, -1]).p).toBe(1);
    expect(signTest([]).p).toBe(1);
  });
});

describe('comparing two evaluations', () => {
  const tasks = (means: number[], tokens: number) =>
    means.map((m, i) => ({
      task_id: `task_${i}`,
      index: i,
      key: `t${i}`,
      rewards: [m],
      passes: m >= 1 ? 1 : 0,
      pass_at_1: m >= 1 ? 1 : 0,
      pass_at_k: m >= 1 ? 1 : 0,
      mean_reward: m,
      prompt_tokens: tokens,
      completion_tokens: 0,
      calls: 1,
      rollouts: [],
      failures: [],
    }));
  it('pairs tasks by key and says whether B is better, with tokens side by side', () => {
    const a = { id: 'ev_a', tasks: tasks([0, 0, 0.3, 0, 0, 0.3, 0, 0, 0, 0], 100) };
    const b = { id: 'ev_b', tasks: tasks([1, 0.3, 0.3, 1, 0.3, 1, 0.3, 1, 0.3, 1], 50) };
    const c = compareEvaluations(a, b, 0);
    expect(c.paired_tasks).toBe(10);
    expect(c.mean_diff).toBeCloseTo(0.59, 12);
    expect(c.sign_test).toMatchObject({ wins: 9, losses: 0, ties: 1 });
    expect(c.significant).toBe(true);
    expect(c.tokens).toEqual({ a_per_task: 100, b_per_task: 50, change: -0.5 });
    expect(compareEvaluations(a, a, 0).significant).toBe(false);
  });
});

describe('attempt failures', () => {
  it('a lost worker or an unreachable backend is the infrastructure; a crash of the harness is the harness', () => {
    expect(failureOf({ status: 'unresponsive', error: 'no heartbeat for 30s' }).kind).toBe('infrastructure');
    expect(failureOf({ status: 'failed', error: 'harness exit code 1:\nTypeError: fetch failed' }).kind).toBe(
      'infrastructure',
    );
    const crash = failureOf({
      status: 'failed',
      error: 'harness exit code 1:\nError: no digit in the reply',
    });
    expect(crash).toEqual({ kind: 'harness', reason: 'harness exit code 1: Error: no digit in the reply' });
  });
  it('the kind the store recorded on the attempt wins over the error text', () => {
    expect(
      failureOf({
        status: 'failed',
        error: 'exit 75',
        failure: { kind: 'infrastructure', reason: 'reported' },
      }),
    ).toEqual({ kind: 'infrastructure', reason: 'reported: exit 75' });
  });
});
