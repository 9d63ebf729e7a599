// Hand-computed cases for every merge mode, advantage estimator, loss aggregation and length limit,
// each citing the formula of shared/spec/samples.md it checks.
import { describe, expect, it } from 'vitest';
import type { LlmCallStatus } from '../protocol/entities';
import { ADV_EPS, drgrpo, grpo, reinforce, rloo } from './advantages';
import { seqMeanTokenMean, seqMeanTokenSum, seqMeanTokenSumNorm, tokenMean } from './aggregation';
import { type BuildOptions, buildSamples, type TrajectoryArrays } from './build';
import { excludedCallMetrics, trajectoryFromCalls } from './index';
import { toSampleJson } from './jsonl';
import { classifyBreak, diagnosePrefixBreak } from './prefix';

const opts = (o: Partial<BuildOptions> = {}): BuildOptions => ({
  merge: 'exact',
  advantage: 'grpo',
  loss_agg: 'token-mean',
  ...o,
});
const call = (p: number[], r: number[], lp: number[] | null = null) => ({
  prompt_ids: p,
  response_ids: r,
  response_logprobs: lp,
});
const traj = (id: string, group: string, reward: number | null, calls: ReturnType<typeof call>[]) =>
  ({ rollout_id: id, group_id: group, reward, calls }) satisfies TrajectoryArrays;
const adv = (r: number[], f: (r: Float64Array) => Float64Array) => Array.from(f(Float64Array.from(r)));

describe('advantage estimators', () => {
  it('grpo: A_i = (r_i − mean)/(std + eps) with the n−1 standard deviation', () => {
    // rewards 1,2,3: mean 2, std = sqrt((1+0+1)/2) = 1
    expect(adv([1, 2, 3], grpo)).toEqual([-1 / (1 + ADV_EPS), 0, 1 / (1 + ADV_EPS)]);
    // rewards 0,1: mean 0.5, std = sqrt(0.5) → A = ±0.5/(0.70710678 + 1e-6)
    const a = adv([0, 1], grpo);
    expect(a[1]).toBeCloseTo(0.5 / (Math.SQRT1_2 + 1e-6), 12);
    expect(a[0]).toBeCloseTo(-a[1], 15);
  });
  it('grpo: a group of one, or a group with std 0, gives 0', () => {
    expect(adv([0.7], grpo)).toEqual([0]);
    expect(adv([0.1, 0.1, 0.1], grpo)).toEqual([0, 0, 0]);
  });
  it('drgrpo: A_i = r_i − mean', () => {
    expect(adv([1, 2, 6], drgrpo)).toEqual([-2, -1, 3]);
    expect(adv([5], drgrpo)).toEqual([0]);
  });
  it('rloo: A_i = r_i − mean of the others; size 1 gives 0', () => {
    expect(adv([1, 2, 3], rloo)).toEqual([1 - 2.5, 2 - 2, 3 - 1.5]);
    expect(adv([4], rloo)).toEqual([0]);
  });
  it('reinforce: A_i = r_i', () => {
    expect(adv([0.25, -1, 3], reinforce)).toEqual([0.25, -1, 3]);
  });
});

describe('loss aggregations', () => {
  // three samples with 2, 1 and 3 mask-1 tokens: T = 6, B = 3
  const m = Int32Array.from([2, 1, 3]);
  it('token-mean: w_t = 1/T', () => expect(Array.from(tokenMean(m))).toEqual([1 / 6, 1 / 6, 1 / 6]));
  it('seq-mean-token-mean: w_t = 1/(B·m_s)', () =>
    expect(Array.from(seqMeanTokenMean(m))).toEqual([1 / 6, 1 / 3, 1 / 9]));
  it('seq-mean-token-sum: w_t = 1/B', () =>
    expect(Array.from(seqMeanTokenSum(m))).toEqual([1 / 3, 1 / 3, 1 / 3]));
  it('seq-mean-token-sum-norm: w_t = 1/(B·max_len), and max_len is required', () => {
    expect(Array.from(seqMeanTokenSumNorm(m, 10))).toEqual([1 / 30, 1 / 30, 1 / 30]);
    expect(() => seqMeanTokenSumNorm(m)).toThrow(/max_len/);
  });
});

describe('buildSamples', () => {
  it('merges calls whose prompt extends the running sequence into one sample (spec example shape)', () => {
    const built = buildSamples(
      [
        traj('r1', 'g1', 1, [call([1, 2, 3], [4, 5], [-0.1, -0.2]), call([1, 2, 3, 4, 5, 6], [7], [-0.3])]),
        traj('r2', 'g1', 0, [call([1, 2, 3], [9], [-0.5])]),
      ],
      opts(),
    );
    const [s] = built.samples.map(toSampleJson);
    const a = 0.5 / (Math.SQRT1_2 + ADV_EPS);
    expect(s.input_ids).toEqual([1, 2, 3, 4, 5, 6, 7]);
    expect(s.loss_mask).toEqual([0, 0, 0, 1, 1, 0, 1]);
    expect(s.old_logprobs).toEqual([null, null, null, -0.1, -0.2, null, -0.3]);
    expect(s.advantages).toEqual([0, 0, 0, a, a, 0, a]);
    // token-mean over T = 3 + 1 = 4 mask tokens
    expect(s.loss_weights).toEqual([0, 0, 0, 0.25, 0.25, 0, 0.25]);
    expect(built.summary).toMatchObject({ trajectories: 2, samples: 2, prefix_breaks: 0, mask_tokens: 4 });
  });

  it('a prompt that does not start with the running sequence starts a new sample and counts a break', () => {
    const built = buildSamples(
      [traj('r1', 'g', 1, [call([1, 2], [3]), call([1, 2, 9], [4]), call([1, 2, 9, 4, 5], [6])])],
      opts({ advantage: 'reinforce' }),
    );
    expect(built.samples.map((s) => Array.from(s.input_ids))).toEqual([
      [1, 2, 3],
      [1, 2, 9, 4, 5, 6],
    ]);
    expect(built.samples.map((s) => s.index)).toEqual([0, 1]);
    expect(built.summary.prefix_breaks).toBe(1);
    const br = built.rollouts.get('r1')!.prefix_breaks;
    expect(br).toMatchObject([{ call_index: 1, position: 2, expected: [3], actual: [9], class: 'other' }]);
  });

  it('a prompt shorter than the running sequence is a break at its end', () => {
    const built = buildSamples([traj('r', 'g', 1, [call([1, 2], [3, 4]), call([1, 2, 3], [5])])], opts());
    expect(built.rollouts.get('r')!.prefix_breaks[0]).toMatchObject({
      position: 3,
      expected: [4],
      actual: [],
    });
  });

  it('merge none emits one sample per call, each its own prompt + response', () => {
    const built = buildSamples(
      [traj('r1', 'g', 1, [call([1, 2], [3]), call([1, 2, 3, 4], [5])])],
      opts({ merge: 'none', advantage: 'reinforce' }),
    );
    expect(built.samples.map((s) => Array.from(s.input_ids))).toEqual([
      [1, 2, 3],
      [1, 2, 3, 4, 5],
    ]);
    expect(built.samples.map((s) => Array.from(s.loss_mask))).toEqual([
      [0, 0, 1],
      [0, 0, 0, 0, 1],
    ]);
    expect(built.summary.prefix_breaks).toBe(0);
  });

  it('rollouts with a null reward are excluded and counted; their group is computed without them', () => {
    const built = buildSamples(
      [
        traj('a', 'g', 2, [call([1], [2])]),
        traj('b', 'g', null, [call([1], [3])]),
        traj('c', 'g', 4, [call([1], [4])]),
      ],
      opts({ advantage: 'drgrpo' }),
    );
    expect(built.summary.excluded).toBe(1);
    expect(built.samples.map((s) => [s.rollout_id, s.advantage])).toEqual([
      ['a', -1],
      ['c', 1],
    ]);
    // the excluded rollout still has its merge stats (for the trajectory view)
    expect(built.rollouts.get('b')!.stats).toEqual({
      samples: 1,
      prefix_breaks: 0,
      mask_tokens: 1,
      truncations: 0,
    });
  });

  it('a group whose rewards are all equal gets zero advantage, is counted, and can be dropped', () => {
    const input = [
      traj('a', 'same', 1, [call([1], [2])]),
      traj('b', 'same', 1, [call([1], [3])]),
      traj('c', 'diff', 0, [call([1], [4])]),
      traj('d', 'diff', 1, [call([1], [5])]),
    ];
    const kept = buildSamples(input, opts());
    expect(kept.summary).toMatchObject({ zero_variance_groups: 1, dropped_groups: 0, samples: 4 });
    expect(kept.samples.slice(0, 2).map((s) => s.advantage)).toEqual([0, 0]);
    const dropped = buildSamples(input, opts({ drop_zero_variance_groups: true }));
    expect(dropped.summary).toMatchObject({ zero_variance_groups: 1, dropped_groups: 1, samples: 2 });
    expect(dropped.samples.map((s) => s.rollout_id)).toEqual(['c', 'd']);
    // token-mean over the kept samples only: T = 2
    expect(dropped.samples[0].loss_weights[1]).toBe(0.5);
  });

  it('an empty response gives a sample without mask-1 tokens and zero weights (B still counts it)', () => {
    const built = buildSamples(
      [traj('a', 'g', 1, [call([1, 2], [])]), traj('b', 'g', 0, [call([1, 2], [3, 4])])],
      opts({ loss_agg: 'seq-mean-token-mean' }),
    );
    const [empty, full] = built.samples;
    expect(Array.from(empty.loss_mask)).toEqual([0, 0]);
    expect(Array.from(empty.loss_weights)).toEqual([0, 0]);
    // seq-mean-token-mean: w = 1/(B·m_s) = 1/(2·2)
    expect(Array.from(full.loss_weights)).toEqual([0, 0, 0.25, 0.25]);
    expect(built.summary).toMatchObject({ samples: 2, mask_tokens: 2 });
  });

  it('seq-mean-token-sum-norm uses the max_len constant and refuses to run without it', () => {
    const input = [traj('a', 'g', 1, [call([1], [2, 3])]), traj('b', 'g', 0, [call([1], [4])])];
    const built = buildSamples(input, opts({ loss_agg: 'seq-mean-token-sum-norm', max_len: 8 }));
    expect(built.samples[0].loss_weights[1]).toBe(1 / 16);
    expect(() => buildSamples(input, opts({ loss_agg: 'seq-mean-token-sum-norm' }))).toThrow(/max_len/);
  });

  it('responses past max_response_tokens are cut and counted; over-long prompts are dropped and counted', () => {
    const built = buildSamples(
      [
        traj('a', 'g', 1, [call([1, 2], [3, 4, 5], [-1, -2, -3]), call([1, 2, 3, 4, 5, 6], [7, 8])]),
        traj('b', 'g', 0, [call([1, 2, 3, 4, 5], [9])]),
      ],
      opts({ max_response_tokens: 4, max_prompt_tokens: 4 }),
    );
    expect(built.samples).toHaveLength(1);
    const s = toSampleJson(built.samples[0]);
    // prompt [1,2] + the first 4 tokens after it: 3,4,5 (response) and 6 (next prompt)
    expect(s.input_ids).toEqual([1, 2, 3, 4, 5, 6]);
    expect(s.loss_mask).toEqual([0, 0, 1, 1, 1, 0]);
    expect(s.old_logprobs).toEqual([null, null, -1, -2, -3, null]);
    expect(built.summary).toMatchObject({ truncated: 1, dropped_prompts: 1, mask_tokens: 3 });
    expect(built.rollouts.get('a')!.stats.truncations).toBe(1);
  });

  it('logprobs that do not match the response length are treated as unknown', () => {
    const built = buildSamples([traj('a', 'g', 1, [call([1], [2, 3], [-1])])], opts());
    expect(toSampleJson(built.samples[0]).old_logprobs).toEqual([null, null, null]);
  });

  it('typed-array inputs give the same samples as plain arrays', () => {
    const plain = [traj('a', 'g', 1, [call([1, 2], [3]), call([1, 2, 3, 4], [5], [-1])])];
    const typed: TrajectoryArrays[] = plain.map((t) => ({
      ...t,
      calls: t.calls.map((c) => ({
        prompt_ids: Int32Array.from(c.prompt_ids),
        response_ids: Int32Array.from(c.response_ids),
        response_logprobs: c.response_logprobs ? Float64Array.from(c.response_logprobs) : null,
      })),
    }));
    expect(buildSamples(typed, opts()).samples.map(toSampleJson)).toEqual(
      buildSamples(plain, opts()).samples.map(toSampleJson),
    );
  });
});

describe('prefix-break classes', () => {
  const vocab: Record<number, string> = {
    1: 'Hello',
    2: ' world',
    3: 'Hel',
    4: 'lo',
    5: '<|im_end|>',
    6: '\n',
    7: '<think>',
    8: 'x',
    9: '<|im_start|>',
    10: 'goodbye',
  };
  const decode = (ids: number[]) => ids.map((i) => vocab[i] ?? '?').join('');

  it('a differing chat-template token is a template break (given the template token ids)', () => {
    const b = diagnosePrefixBreak(1, [1], [7, 8, 2], [1, 2, 5], { templateTokenIds: new Set([5, 7, 9]) });
    expect(b).toMatchObject({ position: 1, expected: [7, 8, 2], actual: [2, 5], class: 'template' });
    expect(b.expected_text).toBeNull();
  });
  it('a differing token whose text is only template markup is a template break (given a decoder)', () => {
    const b = diagnosePrefixBreak(1, [1], [7, 8, 2], [1, 2, 5], { decode });
    expect(b.class).toBe('template');
    expect(b.expected_text).toBe('<think>x world');
  });
  it('the same text under different ids is a retokenization', () => {
    const b = diagnosePrefixBreak(2, [9], [1, 2], [9, 3, 4, 2, 5, 6], { decode });
    expect(b).toMatchObject({ position: 1, class: 'retokenized', expected_text: 'Hello world' });
  });
  it('texts that differ only in template markup are a template break', () => {
    expect(classifyBreak([1, 6, 9, 2], [1, 5, 2], { decode })).toBe('template');
  });
  it('different text is another kind of break', () => {
    expect(classifyBreak([1, 2], [10], { decode })).toBe('other');
    expect(classifyBreak([1, 2], [10], {})).toBe('other');
  });
});

describe('trajectoryFromCalls', () => {
  it('skips failed and cancelled calls, calls without token ids, recording side calls and choices after the first', () => {
    const ok = { prompt_ids: [1], response_ids: [2], response_logprobs: null, status: 'ok' as const };
    const t = trajectoryFromCalls({ id: 'r', group_id: null, reward: 1 }, [
      ok,
      { ...ok, status: 'error' },
      { ...ok, status: 'cancelled' },
      { ...ok, prompt_ids: null },
      { ...ok, response_ids: null },
      { ...ok, prompt_ids: [7], tags: ['side'] },
      { ...ok, prompt_ids: [1, 2, 3] },
      { ...ok, prompt_ids: [1, 2, 3, 4], tags: ['choice:0'] },
      { ...ok, prompt_ids: [1, 2, 3, 4], tags: ['choice:1'] },
    ]);
    expect(t.group_id).toBe('r');
    expect(t.calls.map((c) => c.prompt_ids)).toEqual([[1], [1, 2, 3], [1, 2, 3, 4]]);
  });
});

describe('calls left out of samples', () => {
  const ok = {
    prompt_ids: [1, 2],
    response_ids: [3],
    response_logprobs: [-0.5],
    status: 'ok' as LlmCallStatus,
  };
  it('are counted by reason in the trajectory, the batch summary and the step metrics', () => {
    const calls = [
      ok,
      { ...ok, status: 'logprobs_mismatch' as const, response_logprobs: [] },
      { ...ok, status: 'no_token_ids' as const, prompt_ids: null, response_ids: null },
      { ...ok, status: 'error' as const },
      { ...ok, prompt_ids: null, response_ids: null },
      { ...ok, status: 'error' as const, tags: ['side'] },
      { ...ok, tags: ['choice:1'] },
    ];
    const t = trajectoryFromCalls({ id: 'r', group_id: null, reward: 1 }, calls);
    expect(t.calls.length).toBe(1);
    expect(t.excluded_calls).toEqual({ logprobs_mismatch: 1, no_token_ids: 1, error: 1, text_only: 1 });
    const built = buildSamples([t, { ...t, rollout_id: 'r2' }], {
      merge: 'exact',
      advantage: 'grpo',
      loss_agg: 'token-mean',
    });
    expect(built.summary.excluded_calls).toEqual({
      logprobs_mismatch: 2,
      no_token_ids: 2,
      error: 2,
      text_only: 2,
    });
    expect(excludedCallMetrics(built.summary.excluded_calls)).toEqual({
      excluded_calls: 8,
      'excluded_calls.logprobs_mismatch': 2,
      'excluded_calls.no_token_ids': 2,
      'excluded_calls.error': 2,
      'excluded_calls.text_only': 2,
    });
    expect(excludedCallMetrics({})).toEqual({ excluded_calls: 0 });
  });
});
