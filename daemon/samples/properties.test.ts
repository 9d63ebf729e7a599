// Property-based checks of the merge, the masks, the weights and the advantages (fast-check).
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { AdvantageEstimator, LossAggregation, MergeMode } from '../protocol/algorithm';
import { buildSamples, type TrajectoryArrays, type TrajectoryCallArrays } from './build';

const tokens = (max = 8) => fc.array(fc.integer({ min: 0, max: 6 }), { maxLength: max });

/** A call plan: whether its prompt extends the running sequence, and the new tokens. */
const callPlan = fc.record({
  extend: fc.boolean(),
  fresh: tokens(6),
  response: tokens(5),
  logprobs: fc.boolean(),
});

function materialize(plans: { extend: boolean; fresh: number[]; response: number[]; logprobs: boolean }[]) {
  const calls: TrajectoryCallArrays[] = [];
  let seq: number[] = [];
  for (const p of plans) {
    const prompt = p.extend && calls.length > 0 ? [...seq, ...p.fresh] : [7, ...p.fresh];
    calls.push({
      prompt_ids: prompt,
      response_ids: p.response,
      response_logprobs: p.logprobs ? p.response.map((_, i) => -0.5 - i) : null,
    });
    seq = [...prompt, ...p.response];
  }
  return calls;
}

const trajectories = (opts: { alwaysExtend?: boolean; nonEmpty?: boolean } = {}) =>
  fc
    .array(
      fc.record({
        group: fc.integer({ min: 0, max: 3 }),
        reward: fc.option(fc.double({ min: -2, max: 2, noNaN: true }), { freq: 6 }),
        calls: fc.array(opts.alwaysExtend ? callPlan.map((c) => ({ ...c, extend: true })) : callPlan, {
          minLength: 1,
          maxLength: 5,
        }),
      }),
      { minLength: 1, maxLength: 10 },
    )
    .map((rows) =>
      rows.map(
        (r, i): TrajectoryArrays => ({
          rollout_id: `r${i}`,
          group_id: `g${r.group}`,
          reward: r.reward,
          calls: materialize(
            opts.nonEmpty
              ? r.calls.map((c) => ({ ...c, response: c.response.length ? c.response : [1] }))
              : r.calls,
          ),
        }),
      ),
    );

const options = fc.record({
  merge: fc.constantFrom(...MergeMode.options),
  advantage: fc.constantFrom(...AdvantageEstimator.options),
  loss_agg: fc.constantFrom(...LossAggregation.options),
  max_len: fc.constant(64),
});

describe('samples properties', () => {
  it('merging never loses or reorders a response token, and mask-1 tokens are exactly the response tokens', () => {
    fc.assert(
      fc.property(trajectories(), options, (input, o) => {
        const built = buildSamples(input, o);
        for (const t of input) {
          if (t.reward === null) continue;
          const wantIds = t.calls.flatMap((c) => Array.from(c.response_ids));
          const wantLp = t.calls.flatMap((c) =>
            Array.from(c.response_ids, (_, i) => (c.response_logprobs ? c.response_logprobs[i] : null)),
          );
          const gotIds: number[] = [];
          const gotLp: (number | null)[] = [];
          for (const s of built.samples.filter((x) => x.rollout_id === t.rollout_id)) {
            s.loss_mask.forEach((m, i) => {
              if (m === 1) {
                gotIds.push(s.input_ids[i]);
                gotLp.push(Number.isNaN(s.old_logprobs[i]) ? null : s.old_logprobs[i]);
              } else {
                expect(Number.isNaN(s.old_logprobs[i])).toBe(true);
                expect(s.loss_weights[i]).toBe(0);
                expect(s.advantages[i]).toBe(0);
              }
            });
          }
          expect(gotIds).toEqual(wantIds);
          expect(gotLp).toEqual(wantLp);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('every sample is the last merged call’s prompt + response, so no prompt token is invented', () => {
    fc.assert(
      fc.property(trajectories(), options, (input, o) => {
        const built = buildSamples(input, o);
        for (const s of built.samples) {
          const t = input.find((x) => x.rollout_id === s.rollout_id)!;
          const ends = t.calls.map((c) => [...Array.from(c.prompt_ids), ...Array.from(c.response_ids)]);
          expect(ends).toContainEqual(Array.from(s.input_ids));
        }
      }),
      { numRuns: 200 },
    );
  });

  it('loss weights sum to 1 for token-mean and seq-mean-token-mean', () => {
    fc.assert(
      fc.property(
        trajectories({ nonEmpty: true }),
        fc.constantFrom('token-mean', 'seq-mean-token-mean') satisfies fc.Arbitrary<LossAggregation>,
        fc.constantFrom(...MergeMode.options),
        (input, lossAgg, merge) => {
          const built = buildSamples(input, { merge, advantage: 'grpo', loss_agg: lossAgg });
          fc.pre(built.samples.length > 0);
          let sum = 0;
          for (const s of built.samples) for (const w of s.loss_weights) sum += w;
          expect(sum).toBeCloseTo(1, 9);
        },
      ),
      { numRuns: 200 },
    );
  });

  it('calls that truly extend each other merge into one sample per rollout', () => {
    fc.assert(
      fc.property(trajectories({ alwaysExtend: true }), (input) => {
        const built = buildSamples(input, { merge: 'exact', advantage: 'reinforce', loss_agg: 'token-mean' });
        const kept = input.filter((t) => t.reward !== null);
        expect(built.samples.map((s) => s.rollout_id)).toEqual(kept.map((t) => t.rollout_id));
        expect(built.summary.prefix_breaks).toBe(0);
        built.samples.forEach((s, i) => {
          const last = kept[i].calls[kept[i].calls.length - 1];
          expect(Array.from(s.input_ids)).toEqual([
            ...Array.from(last.prompt_ids),
            ...Array.from(last.response_ids),
          ]);
        });
      }),
      { numRuns: 200 },
    );
  });

  it('merge none gives one sample per call', () => {
    fc.assert(
      fc.property(trajectories(), (input) => {
        const built = buildSamples(input, { merge: 'none', advantage: 'grpo', loss_agg: 'token-mean' });
        const want = input
          .filter((t) => t.reward !== null)
          .flatMap((t) => t.calls.map((_, k) => [t.rollout_id, k]));
        expect(built.samples.map((s) => [s.rollout_id, s.index])).toEqual(want);
      }),
      { numRuns: 200 },
    );
  });

  it('grpo advantages of a group sum to about 0', () => {
    fc.assert(
      fc.property(trajectories(), (input) => {
        const built = buildSamples(input, { merge: 'exact', advantage: 'grpo', loss_agg: 'token-mean' });
        const byGroup = new Map<string, number>();
        const seen = new Set<string>();
        for (const s of built.samples) {
          if (seen.has(s.rollout_id)) continue;
          seen.add(s.rollout_id);
          byGroup.set(s.group_id, (byGroup.get(s.group_id) ?? 0) + s.advantage);
        }
        // every rewarded rollout here has ≥ 1 sample (≥ 1 call), so each group is complete
        for (const sum of byGroup.values()) expect(Math.abs(sum)).toBeLessThan(1e-6);
      }),
      { numRuns: 300 },
    );
  });
});
