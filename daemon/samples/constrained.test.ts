// A call whose decoding a request field constrained (logit_bias, structured output, a forced tool choice …)
// was sampled from a distribution the policy's softmax does not describe (vLLM 0.34
// v1/worker/gpu/sample/sampler.py:71,170; v1/worker/gpu/model_runner.py:1734): its response tokens stay
// in the sample as context, out of the loss, and are counted as excluded "constrained".
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { NEUTRAL_SAMPLING } from '../protocol/algorithm';
import type { LlmCall } from '../protocol/entities';
import { storedCall } from '../store/test-calls';
import { buildSamples, type TrajectoryArrays, type TrajectoryCallArrays } from './build';
import { excludedCallMetrics, trajectoryFromCalls } from './index';
import { parseTrajectoryLine, toSampleJson, trajectoryArrays } from './jsonl';

const opts = { merge: 'exact', advantage: 'reinforce', loss_agg: 'token-mean' } as const;
const call = (p: number[], r: number[], constrained?: string[]): TrajectoryCallArrays => ({
  prompt_ids: p,
  response_ids: r,
  response_logprobs: r.map(() => -0.5),
  ...(constrained ? { constrained } : {}),
});
const traj = (calls: TrajectoryCallArrays[], id = 'r1'): TrajectoryArrays => ({
  rollout_id: id,
  group_id: 'g1',
  reward: 1,
  calls,
});

describe('a constrained call in the samples', () => {
  it("keeps its tokens as context of the merged sample, with mask 0, no logprob and no weight; the other calls' tokens train", () => {
    const built = buildSamples(
      [
        traj([
          call([1, 2], [3]),
          call([1, 2, 3, 4], [5, 6], ['tool_choice']),
          call([1, 2, 3, 4, 5, 6, 7], [8]),
        ]),
      ],
      opts,
    );
    expect(built.samples).toHaveLength(1);
    const s = toSampleJson(built.samples[0]);
    expect(s.input_ids).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(s.loss_mask).toEqual([0, 0, 1, 0, 0, 0, 0, 1]);
    expect(s.old_logprobs).toEqual([null, null, -0.5, null, null, null, null, -0.5]);
    expect(s.loss_weights).toEqual([0, 0, 0.5, 0, 0, 0, 0, 0.5]); // token-mean over the 2 trained tokens
    expect(built.summary).toMatchObject({
      prefix_breaks: 0,
      mask_tokens: 2,
      excluded_calls: { constrained: 1 },
    });
    expect(excludedCallMetrics(built.summary.excluded_calls)).toEqual({
      excluded_calls: 1,
      'excluded_calls.constrained': 1,
    });
    expect(built.rollouts.get('r1')?.stats.mask_tokens).toBe(2);
  });

  it('a rollout whose every call is constrained gives a sample with nothing to train on', () => {
    const built = buildSamples([traj([call([1], [2, 3], ['response_format'])])], opts);
    expect(Array.from(built.samples[0].loss_mask)).toEqual([0, 0, 0]);
    expect(built.summary.mask_tokens).toBe(0);
  });

  it('marking calls constrained changes nothing but their response tokens leaving the loss (property)', () => {
    const plan = fc.array(
      fc.record({
        extend: fc.boolean(),
        fresh: fc.array(fc.integer({ min: 0, max: 5 }), { maxLength: 4 }),
        response: fc.array(fc.integer({ min: 0, max: 5 }), { minLength: 1, maxLength: 4 }),
        constrained: fc.boolean(),
      }),
      { minLength: 1, maxLength: 5 },
    );
    fc.assert(
      fc.property(plan, (plans) => {
        const plain: TrajectoryCallArrays[] = [];
        let seq: number[] = [];
        for (const p of plans) {
          const prompt = p.extend && plain.length > 0 ? [...seq, ...p.fresh] : [9, ...p.fresh];
          plain.push(call(prompt, p.response));
          seq = [...prompt, ...p.response];
        }
        const marked = plain.map((c, i) =>
          plans[i].constrained ? { ...c, constrained: ['logit_bias'] } : c,
        );
        const a = buildSamples([traj(plain)], opts);
        const b = buildSamples([traj(marked)], opts);
        expect(b.samples.map((s) => Array.from(s.input_ids))).toEqual(
          a.samples.map((s) => Array.from(s.input_ids)),
        );
        expect(b.summary.prefix_breaks).toBe(a.summary.prefix_breaks);
        // Expected mask: the plain one with each constrained call's response range zeroed.
        const expected = a.samples.map((s) => Array.from(s.loss_mask));
        // Calls join samples by the merge rule (the prompt starts with the previous call's whole sequence).
        const extends_ = (i: number) => {
          const prev = [...Array.from(plain[i - 1].prompt_ids), ...Array.from(plain[i - 1].response_ids)];
          return prev.every((t, j) => plain[i].prompt_ids[j] === t);
        };
        const sampleOf = (i: number) => {
          let s = 0;
          for (let j = 1; j <= i; j++) if (!extends_(j)) s++;
          return s;
        };
        for (let i = 0; i < plain.length; i++) {
          if (!plans[i].constrained) continue;
          const s = sampleOf(i);
          const start = plain[i].prompt_ids.length;
          expected[s].fill(0, start, start + plain[i].response_ids.length);
        }
        expect(b.samples.map((s) => Array.from(s.loss_mask))).toEqual(expected);
        const constrainedCount = plans.filter((p) => p.constrained).length;
        expect(b.summary.excluded_calls.constrained ?? 0).toBe(constrainedCount);
        expect(b.summary.mask_tokens).toBe(expected.flat().reduce((x, y) => x + y, 0));
        for (const s of b.samples)
          s.loss_mask.forEach((m, t) => {
            if (m === 0) expect(s.loss_weights[t]).toBe(0);
            else expect(Number.isNaN(s.old_logprobs[t])).toBe(false);
          });
      }),
    );
  });
});

describe('where the mark comes from', () => {
  it("a stored call's sampling.constrained marks its trajectory call", () => {
    const sampling = (constrained?: string[]): LlmCall['sampling'] => ({
      ...NEUTRAL_SAMPLING,
      seed: null,
      max_tokens: null,
      source: 'run',
      overridden: null,
      ...(constrained ? { constrained } : {}),
    });
    const t = trajectoryFromCalls({ id: 'r1', group_id: 'g1', reward: 1 }, [
      storedCall({ sampling: sampling(['logit_bias']) }),
      storedCall({ sampling: sampling() }),
    ]);
    expect(t.calls.map((c) => c.constrained ?? null)).toEqual([['logit_bias'], null]);
  });

  it('a trajectory line may name the fields that constrained a call', () => {
    const line = JSON.stringify({
      rollout_id: 'r1',
      group_id: 'g1',
      reward: 1,
      calls: [{ prompt_ids: [1], response_ids: [2], constrained: ['min_tokens'] }],
    });
    const parsed = parseTrajectoryLine(line, 1);
    if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
    const built = buildSamples([trajectoryArrays(parsed.value)], opts);
    expect(Array.from(built.samples[0].loss_mask)).toEqual([0, 0]);
  });
});
