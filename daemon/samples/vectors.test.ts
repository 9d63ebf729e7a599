// vectors.json (shared with the Python trainer) against buildSamples / the loss functions, and against a
// second, deliberately naive reading of shared/spec/samples.md written from the text alone.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { SampleJson, Trajectory } from '../protocol/samples';
import { buildSamples } from './build';
import { toSampleJson, trajectoryArrays } from './jsonl';
import {
  klK3,
  policySequenceLoss,
  policyTokenLoss,
  ppoClipLoss,
  ppoClipped,
  truncatedIsWeight,
  weightedLoss,
} from './loss';
import { scatterIndices } from './validation';
import { generateVectors, readVectors } from './vectors.gen';

interface Case {
  options: {
    merge: 'exact' | 'none';
    advantage: 'grpo' | 'drgrpo' | 'rloo' | 'reinforce';
    loss_agg: 'token-mean' | 'seq-mean-token-mean' | 'seq-mean-token-sum' | 'seq-mean-token-sum-norm';
    max_len: number | null;
    max_prompt_tokens?: number | null;
    max_response_tokens?: number | null;
    drop_zero_variance_groups?: boolean;
  };
  samples: SampleJson[];
  summary: Record<string, number>;
}
const vectors = JSON.parse(readFileSync(new URL('./vectors.json', import.meta.url), 'utf8')) as {
  adv_eps: number;
  trajectories: Trajectory[];
  cases: Case[];
  limit_cases: Case[];
  policy_loss: {
    clip_low: number;
    clip_high: number;
    logp: number[];
    old_logp: number[];
    advantage: number[];
    loss: number[];
    clipped: boolean[];
    weights: number[];
    total: number;
  };
  tis: { cap: number; cases: { trainer_old_logp: number; inference_logp: number; weight: number }[] };
  kl_k3: { logp: number; ref_logp: number; kl: number }[];
};
const {
  token_loss: tokenCases,
  sequence_loss: sequenceCases,
  cispo_loss: cispoCases,
  scatter,
} = readVectors();

/** The per-token loss as spec/samples.md words it, read literally: [ℓ_t, ∂ℓ_t/∂lp_t, w_t]. */
function literalToken(
  lp: number,
  old: number,
  mu: number | null,
  A: number,
  c: { clip_low: number; clip_high: number; tis_cap: number | null; dual_clip: number | null },
): [number, number, number] {
  const clamp20 = (x: number) => Math.max(-20, Math.min(20, x));
  const known = mu !== null && mu > -9999;
  let logRatio = lp - old;
  let slope = 1; // ∂ log r / ∂ lp
  if (c.tis_cap === null && known) {
    logRatio = clamp20(lp - mu);
    if (Math.abs(lp - mu) > 20) slope = 0;
  }
  const r = Math.exp(logRatio);
  const rc = Math.max(1 - c.clip_low, Math.min(1 + c.clip_high, r));
  let l = -Math.min(r * A, rc * A);
  let g = r * A <= rc * A ? -r * A * slope : 0; // the unclipped term is the minimum: it carries the gradient
  if (c.dual_clip !== null && A < 0 && -c.dual_clip * A < l) {
    l = -c.dual_clip * A;
    g = 0;
  }
  const w = c.tis_cap !== null && known ? Math.min(Math.exp(clamp20(old - mu)), c.tis_cap) : 1;
  return [l * w, g * w, w];
}

/** The spec, read literally, with plain arrays (no limits: the 32 main cases). */
function naive(
  trajs: Trajectory[],
  o: Case['options'],
): { samples: SampleJson[]; summary: Record<string, number> } {
  const eps = 1e-6;
  const kept = trajs.filter((t) => t.reward !== null);
  const adv = new Map<string, number>();
  const groups = [...new Set(kept.map((t) => t.group_id))];
  for (const g of groups) {
    const members = kept.filter((t) => t.group_id === g);
    const r = members.map((t) => t.reward as number);
    const n = r.length;
    const mean = r.reduce((a, b) => a + b, 0) / n;
    const std = n > 1 ? Math.sqrt(r.reduce((a, b) => a + (b - mean) ** 2, 0) / (n - 1)) : 0;
    members.forEach((t, i) => {
      let a: number;
      if (o.advantage === 'grpo') a = n === 1 || std === 0 ? 0 : (r[i] - mean) / (std + eps);
      else if (o.advantage === 'drgrpo') a = r[i] - mean;
      else if (o.advantage === 'rloo')
        a = n === 1 ? 0 : r[i] - (r.reduce((x, y) => x + y, 0) - r[i]) / (n - 1);
      else a = r[i];
      adv.set(t.rollout_id, a);
    });
  }
  const out: Omit<SampleJson, 'loss_weights'>[] = [];
  let breaks = 0;
  for (const t of kept) {
    let S: number[] = [];
    let M: number[] = [];
    let L: (number | null)[] = [];
    let index = 0;
    const emit = () => {
      const a = adv.get(t.rollout_id)!;
      out.push({
        rollout_id: t.rollout_id,
        group_id: t.group_id,
        index: index++,
        input_ids: S,
        loss_mask: M as (0 | 1)[],
        advantages: M.map((m) => (m ? a : 0)),
        old_logprobs: L,
      });
    };
    t.calls.forEach((c, k) => {
      const lp = (i: number) => (c.response_logprobs ? c.response_logprobs[i] : null);
      const startsWithS =
        k > 0 && S.every((tok, i) => c.prompt_ids[i] === tok) && c.prompt_ids.length >= S.length;
      if (k > 0 && o.merge === 'exact' && startsWithS) {
        const extra = c.prompt_ids.slice(S.length);
        S = [...S, ...extra, ...c.response_ids];
        M = [...M, ...extra.map(() => 0), ...c.response_ids.map(() => 1)];
        L = [...L, ...extra.map(() => null), ...c.response_ids.map((_, i) => lp(i))];
        return;
      }
      if (k > 0) {
        emit();
        if (o.merge === 'exact') breaks++;
      }
      S = [...c.prompt_ids, ...c.response_ids];
      M = [...c.prompt_ids.map(() => 0), ...c.response_ids.map(() => 1)];
      L = [...c.prompt_ids.map(() => null), ...c.response_ids.map((_, i) => lp(i))];
    });
    if (t.calls.length > 0) emit();
  }
  const B = out.length;
  const ms = out.map((s) => s.loss_mask.filter((m) => m === 1).length);
  const T = ms.reduce((a, b) => a + b, 0);
  const samples = out.map((s, i) => {
    const w =
      o.loss_agg === 'token-mean'
        ? 1 / T
        : o.loss_agg === 'seq-mean-token-mean'
          ? 1 / (B * ms[i])
          : o.loss_agg === 'seq-mean-token-sum'
            ? 1 / B
            : 1 / (B * (o.max_len as number));
    return { ...s, loss_weights: s.loss_mask.map((m) => (m ? w : 0)) };
  });
  return {
    samples,
    summary: {
      trajectories: trajs.length,
      samples: B,
      prefix_breaks: breaks,
      excluded: trajs.length - kept.length,
      mask_tokens: T,
    },
  };
}

function expectClose(got: SampleJson[], want: SampleJson[]) {
  expect(got.map((s) => [s.rollout_id, s.index, s.input_ids, s.loss_mask, s.old_logprobs])).toEqual(
    want.map((s) => [s.rollout_id, s.index, s.input_ids, s.loss_mask, s.old_logprobs]),
  );
  got.forEach((s, i) => {
    s.advantages.forEach((a, t) => {
      expect(a).toBeCloseTo(want[i].advantages[t], 12);
    });
    s.loss_weights.forEach((w, t) => {
      expect(w).toBeCloseTo(want[i].loss_weights[t], 12);
    });
  });
}

const label = (c: Case) =>
  `${c.options.merge} ${c.options.advantage} ${c.options.loss_agg}${c.options.max_len ? ` max_len=${c.options.max_len}` : ''}`;

describe('shared test vectors', () => {
  it('cover every merge × advantage × loss aggregation combination', () => {
    expect(new Set(vectors.cases.map(label)).size).toBe(2 * 4 * 4);
  });

  it('vectors.json is what the generator writes today', () => {
    expect(JSON.parse(JSON.stringify(generateVectors()))).toEqual(vectors);
  });

  for (const c of [...vectors.cases, ...vectors.limit_cases]) {
    it(`buildSamples reproduces ${label(c)}${c.options.max_prompt_tokens !== undefined ? ' (limits)' : ''}`, () => {
      const built = buildSamples(vectors.trajectories.map(trajectoryArrays), {
        merge: c.options.merge,
        advantage: c.options.advantage,
        loss_agg: c.options.loss_agg,
        max_len: c.options.max_len ?? undefined,
        max_prompt_tokens: c.options.max_prompt_tokens ?? undefined,
        max_response_tokens: c.options.max_response_tokens ?? undefined,
        drop_zero_variance_groups: c.options.drop_zero_variance_groups,
      });
      expect(built.samples.map(toSampleJson)).toEqual(c.samples);
      expect(built.summary).toMatchObject(c.summary);
    });
  }

  for (const c of vectors.cases) {
    it(`a literal reading of the spec agrees on ${label(c)}`, () => {
      const got = naive(vectors.trajectories, c.options);
      expectClose(got.samples, c.samples);
      expect(got.summary).toEqual(c.summary);
    });
  }

  it('limit cases cut responses, drop long prompts and zero-variance groups as documented', () => {
    const [drop, limits] = vectors.limit_cases;
    // g2 (one rollout) and g3 (two equal rewards) are zero-variance groups and are left out
    expect(drop.summary).toMatchObject({ zero_variance_groups: 2, dropped_groups: 2 });
    expect(drop.samples.map((s) => s.group_id)).not.toContain('g3');
    expect(limits.summary).toMatchObject({ truncated: 1, dropped_prompts: 1 });
    // r1's merged sample: prompt [1,2,3] + the first 5 tokens after it
    expect(limits.samples.find((s) => s.rollout_id === 'r1')!.input_ids).toEqual([1, 2, 3, 10, 11, 4, 12, 5]);
  });

  it('per-token PPO-clip losses match the vectors and the hand-computed points', () => {
    const p = vectors.policy_loss;
    const loss = ppoClipLoss(p.logp, p.old_logp, p.advantage, p.clip_low, p.clip_high);
    expect(Array.from(loss)).toEqual(p.loss);
    expect(
      p.logp.map((l, t) => ppoClipped(l, p.old_logp[t], p.advantage[t], p.clip_low, p.clip_high)),
    ).toEqual(p.clipped);
    expect(weightedLoss(loss, p.weights)).toBeCloseTo(p.total, 14);
    // ratio 1: ℓ = −A; ratio e^0.5 > 1.28 with A = 1: clipped to −1.28; ratio e^−0.5 < 0.8 with A = −1:
    // −min(−e^−0.5, −0.8) = 0.8; ratio e^0.5 with A = −1 is not clipped: ℓ = e^0.5
    expect(p.loss[0]).toBe(-1);
    expect(p.loss[1]).toBeCloseTo(-1.28, 14);
    expect(p.loss[4]).toBeCloseTo(0.8, 14);
    expect(p.loss[3]).toBeCloseTo(Math.exp(0.5), 14);
  });

  it('truncated importance weights and the k3 KL match the vectors', () => {
    for (const c of vectors.tis.cases) {
      expect(truncatedIsWeight(c.trainer_old_logp, c.inference_logp, vectors.tis.cap)).toBe(c.weight);
    }
    expect(vectors.tis.cases[3].weight).toBe(2);
    for (const c of vectors.kl_k3) expect(klK3(c.logp, c.ref_logp)).toBe(c.kl);
  });

  it('the old − μ log-ratio of the TIS weight is clamped to ±20', () => {
    expect(vectors.tis.cases.at(-1)!.weight).toBe(Math.exp(-20));
  });

  for (const c of tokenCases) {
    it(`per-token policy loss, gradient and TIS weight: ${c.name}`, () => {
      c.logp.forEach((lp, t) => {
        const got = policyTokenLoss(
          lp,
          c.old_logp[t],
          c.rollout_logp[t] ?? Number.NaN,
          c.advantage[t],
          c.loss,
        );
        expect(got.loss).toBe(c.expected.token_loss[t]);
        expect(c.weights[t] * got.dlogp).toBe(c.expected.grad[t]);
        expect(got.clipped).toBe(c.expected.clipped[t]);
        expect(got.tisWeight).toBe(c.expected.tis_weight[t]);
        const [l, g, w] = literalToken(lp, c.old_logp[t], c.rollout_logp[t], c.advantage[t], c.loss);
        expect(c.expected.token_loss[t]).toBeCloseTo(l, 9);
        expect(c.expected.grad[t]).toBeCloseTo(c.weights[t] * g, 12);
        expect(c.expected.tis_weight[t]).toBeCloseTo(w, 14);
      });
      expect(weightedLoss(c.expected.token_loss, c.weights)).toBeCloseTo(c.expected.total, 6);
    });
  }

  for (const c of sequenceCases) {
    it(`sequence-ratio (GSPO) loss, gradient and clip flags: ${c.name}`, () => {
      const seqs = [...new Set(c.sequence_ids)];
      for (const id of seqs) {
        const idx = c.sequence_ids.flatMap((s, t) => (s === id ? [t] : []));
        const mu = idx.map((t) => c.rollout_logp[t] ?? Number.NaN);
        const got = policySequenceLoss(
          idx.map((t) => c.logp[t]),
          idx.map((t) => c.old_logp[t]),
          mu,
          idx.map((t) => c.advantage[t]),
          c.loss,
        );
        // the README's formula read literally: s = exp(mean of the token-mode log-ratios), PPO-clip on s
        const logS = idx.reduce((a, t) => a + c.expected.log_ratio[t], 0) / idx.length;
        idx.forEach((t, k) => {
          expect(got[k].loss).toBe(c.expected.token_loss[t]);
          expect(c.weights[t] * got[k].dlogp).toBe(c.expected.grad[t]);
          expect(got[k].clipped).toBe(c.expected.clipped[t]);
          expect(got[k].tisWeight).toBe(c.expected.tis_weight[t]);
          expect(c.expected.sequence_log_ratio[t]).toBeCloseTo(logS, 14);
          const [tl, , w] = literalToken(c.logp[t], c.old_logp[t], c.rollout_logp[t], c.advantage[t], c.loss);
          expect(c.expected.tis_weight[t]).toBeCloseTo(w, 14);
          // a token alone in its sequence has its token-mode loss
          if (idx.length === 1) expect(c.expected.token_loss[t]).toBeCloseTo(tl, 12);
          const s = Math.exp(logS);
          const A = c.advantage[t];
          const l = -Math.min(s * A, Math.min(Math.max(s, 1 - c.loss.clip_low), 1 + c.loss.clip_high) * A);
          const capped = c.loss.dual_clip !== null && A < 0 ? Math.min(l, -c.loss.dual_clip * A) : l;
          expect(c.expected.token_loss[t]).toBeCloseTo(capped * w, 9);
        });
      }
      expect(weightedLoss(c.expected.token_loss, c.weights)).toBeCloseTo(c.expected.total, 9);
    });
  }

  it('the sequence cases clip whole sequences and give a ±20-clamped token no gradient', () => {
    const [later, , bypass, dual] = sequenceCases;
    expect(later.expected.clipped).toEqual([
      false,
      false,
      false,
      false,
      true,
      true,
      true,
      true,
      true,
      true,
      true,
    ]);
    expect(bypass.expected.grad[1]).toBe(0); // lp − μ = 24.9, clamped to 20
    expect(bypass.expected.grad[0]).toBeGreaterThan(0);
    expect(bypass.expected.grad[0]).toBe(bypass.expected.grad[2]); // −s·A·weight, the same in the sequence
    expect(dual.expected.token_loss.slice(0, 3)).toEqual(
      dual.expected.tis_weight.slice(0, 3).map((w) => 3 * w),
    );
  });

  for (const c of cispoCases) {
    it(`CISPO loss, gradient and clip flags: ${c.name}`, () => {
      c.logp.forEach((lp, t) => {
        const [old, mu, A] = [c.old_logp[t], c.rollout_logp[t], c.advantage[t]];
        const got = policyTokenLoss(lp, old, mu ?? Number.NaN, A, c.loss);
        expect(got.loss).toBe(c.expected.token_loss[t]);
        expect(c.weights[t] * got.dlogp).toBe(c.expected.grad[t]);
        expect(got.clipped).toBe(c.expected.clipped[t]);
        expect(got.tisWeight).toBe(c.expected.tis_weight[t]);
        // the README's formula read literally: r as in token mode, its weight clip(r) detached, ℓ = −weight·A·lp
        const known = mu !== null && mu > -9999;
        const r = Math.exp(
          c.loss.tis_cap === null && known ? Math.max(-20, Math.min(20, lp - mu)) : lp - old,
        );
        const weight = Math.max(1 - c.loss.clip_low, Math.min(1 + c.loss.clip_high, r));
        const [, ppoGrad, w] = literalToken(lp, old, mu, A, c.loss);
        expect(c.expected.token_loss[t]).toBeCloseTo(-weight * A * lp * w, 12);
        expect(c.expected.grad[t]).toBeCloseTo(-c.weights[t] * weight * A * w, 12);
        expect(c.expected.ppo_grad[t]).toBeCloseTo(c.weights[t] * ppoGrad, 12);
        expect(c.expected.clipped[t]).toBe(weight !== r);
      });
      expect(weightedLoss(c.expected.token_loss, c.weights)).toBeCloseTo(c.expected.total, 9);
    });
  }

  it("CISPO's gradient is PPO's where the weight is unclipped; a clipped token keeps one (PPO-clip: none)", () => {
    for (const c of cispoCases)
      c.expected.clipped.forEach((clipped, t) => {
        if (!clipped) expect(c.expected.grad[t]).toBeCloseTo(c.expected.ppo_grad[t], 14);
        else expect(Math.abs(c.expected.grad[t])).toBeGreaterThan(0);
      });
    const [later, , bypass, dual] = cispoCases;
    // r = e^0.6 on A = 1, e^−0.6 on A = −1: PPO-clip drops both, CISPO weighs them 1.28 and 0.8
    expect([later.expected.ppo_grad[1], later.expected.ppo_grad[4]]).toEqual([0, 0]);
    expect(later.expected.grad[1]).toBeCloseTo(-0.125 * 1.28 * later.expected.tis_weight[1], 14);
    expect(later.expected.grad[4]).toBeCloseTo(0.125 * 0.8, 14);
    expect(bypass.expected.grad[5]).toBeCloseTo((1 / 9) * 1.28, 14); // lp − μ = 24.9, clamped: a gradient still
    expect(bypass.expected.clipped[7]).toBe(false); // r = e^−0.5 with clip_low 10: no lower bound
    expect(dual.expected.token_loss[0]).toBeCloseTo(1.28 * -0.2 * dual.expected.tis_weight[0], 14); // no cap
  });

  it('decoupled PPO weighs a mismatched token by min(π/μ, C) once, not by its square', () => {
    const c = tokenCases[0];
    // token 1: π/μ = 1.5 with A = −1, token 2: π/μ = e³ over the cap C = 2; both at lp = old
    expect(c.expected.grad[1] / c.weights[1]).toBeCloseTo(1.5, 14);
    expect(c.expected.grad[2] / c.weights[2]).toBeCloseTo(2, 14);
    // the correction applied twice (ratio against μ, then TIS) would give 1.5² and e³ · 2
    expect(c.expected.grad[1] / c.weights[1]).not.toBeCloseTo(2.25, 3);
  });

  it("vLLM's −9999 floor and an absent rollout logprob are unknown: weight 1, left out of validation", () => {
    const c = tokenCases[0];
    expect([c.expected.tis_weight[4], c.expected.tis_weight[5]]).toEqual([1, 1]);
    expect(c.validation!.tokens).toBe(7);
    expect(tokenCases.at(-1)!.validation).toBeNull();
  });

  it('the validation scatter is a deterministic subsample of at most 512 points', () => {
    expect(scatterIndices(scatter.n, scatter.max)).toEqual(scatter.indices);
    expect(scatter.indices).toHaveLength(512);
    expect(scatterIndices(5)).toEqual([0, 1, 2, 3, 4]);
  });
});
