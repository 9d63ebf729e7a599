// Writes vectors.json: shared test vectors for the samples stage and the per-token policy loss, read by
// vectors.test.ts here and by the Python trainer. Regenerate with `npx tsx daemon/samples/vectors.gen.ts`
// only when the spec changes (then `npx biome format --write daemon/samples/vectors.json`); the test checks
// the file against an independent reading of the spec.
import { readFileSync, writeFileSync } from 'node:fs';
import { AdvantageEstimator, LossAggregation, MergeMode } from '../protocol/algorithm';
import type { Trajectory } from '../protocol/samples';
import { ADV_EPS } from './advantages';
import { type BuildOptions, type BuildSummary, buildSamples } from './build';
import { toSampleJson, trajectoryArrays } from './jsonl';
import {
  CLIP_HIGH,
  CLIP_LOW,
  klK3,
  ppoClipLoss,
  ppoClipped,
  TIS_CAP,
  truncatedIsWeight,
  weightedLoss,
} from './loss';
import { cispoLossCases, sequenceLossCases, tokenLossCases } from './loss-vectors';
import { SCATTER_MAX, scatterIndices } from './validation';

export const VECTOR_MAX_LEN = 16;

export const vectorTrajectories: Trajectory[] = [
  // three calls, each prompt extends the previous prompt + response: one sample
  {
    rollout_id: 'r1',
    group_id: 'g1',
    reward: 1,
    calls: [
      { prompt_ids: [1, 2, 3], response_ids: [10, 11], response_logprobs: [-0.1, -0.2] },
      { prompt_ids: [1, 2, 3, 10, 11, 4], response_ids: [12], response_logprobs: [-0.3] },
      { prompt_ids: [1, 2, 3, 10, 11, 4, 12, 5, 6], response_ids: [13, 14], response_logprobs: [-0.4, -0.5] },
    ],
  },
  // a prefix break: the second prompt rewrote the first response; its logprobs are unknown
  {
    rollout_id: 'r2',
    group_id: 'g1',
    reward: 0,
    calls: [
      { prompt_ids: [1, 2, 3], response_ids: [20, 21], response_logprobs: [-1.5, -0.25] },
      { prompt_ids: [1, 2, 3, 20, 22, 4], response_ids: [23], response_logprobs: null },
    ],
  },
  // one call, logprobs absent
  {
    rollout_id: 'r3',
    group_id: 'g1',
    reward: 0.5,
    calls: [{ prompt_ids: [1, 2, 3], response_ids: [30, 31, 32] }],
  },
  // null reward: excluded
  {
    rollout_id: 'r4',
    group_id: 'g1',
    reward: null,
    calls: [{ prompt_ids: [1, 2, 3], response_ids: [40], response_logprobs: [-0.9] }],
  },
  // a group of one
  {
    rollout_id: 'r5',
    group_id: 'g2',
    reward: 0.3,
    calls: [{ prompt_ids: [7, 8], response_ids: [50, 51], response_logprobs: [-0.05, -0.6] }],
  },
  // a group whose rewards are all equal
  {
    rollout_id: 'r6',
    group_id: 'g3',
    reward: 1,
    calls: [{ prompt_ids: [9], response_ids: [60], response_logprobs: [-0.7] }],
  },
  {
    rollout_id: 'r7',
    group_id: 'g3',
    reward: 1,
    calls: [{ prompt_ids: [9], response_ids: [61, 62], response_logprobs: [-0.8, -0.01] }],
  },
  // an empty response, then a call that extends it
  {
    rollout_id: 'r8',
    group_id: 'g4',
    reward: -1,
    calls: [
      { prompt_ids: [5, 6, 7], response_ids: [], response_logprobs: [] },
      {
        prompt_ids: [5, 6, 7, 8],
        response_ids: [80, 81, 82, 83],
        response_logprobs: [-0.2, -0.2, -0.3, -0.4],
      },
    ],
  },
  {
    rollout_id: 'r9',
    group_id: 'g4',
    reward: 2,
    calls: [{ prompt_ids: [5, 6], response_ids: [90], response_logprobs: [-2] }],
  },
];

function withoutExcludedCalls({ excluded_calls: _, ...summary }: BuildSummary) {
  return summary;
}

function runCase(o: BuildOptions & { extended?: boolean }) {
  const built = buildSamples(vectorTrajectories.map(trajectoryArrays), o);
  const { trajectories, samples, prefix_breaks, excluded, mask_tokens } = built.summary;
  return {
    options: {
      merge: o.merge,
      advantage: o.advantage,
      loss_agg: o.loss_agg,
      max_len: o.max_len ?? null,
      ...(o.extended
        ? {
            max_prompt_tokens: o.max_prompt_tokens ?? null,
            max_response_tokens: o.max_response_tokens ?? null,
            drop_zero_variance_groups: o.drop_zero_variance_groups ?? false,
          }
        : {}),
    },
    samples: built.samples.map(toSampleJson),
    // Vector trajectories come from no store: no calls are left out of them (excluded_calls is {}).
    summary: o.extended
      ? withoutExcludedCalls(built.summary)
      : { trajectories, samples, prefix_breaks, excluded, mask_tokens },
  };
}

export function generateVectors() {
  const cases = [];
  for (const merge of MergeMode.options)
    for (const advantage of AdvantageEstimator.options)
      for (const loss_agg of LossAggregation.options)
        cases.push(
          runCase({
            merge,
            advantage,
            loss_agg,
            max_len: loss_agg === 'seq-mean-token-sum-norm' ? VECTOR_MAX_LEN : undefined,
          }),
        );
  const limitCases = [
    runCase({
      merge: 'exact',
      advantage: 'grpo',
      loss_agg: 'token-mean',
      drop_zero_variance_groups: true,
      extended: true,
    }),
    runCase({
      merge: 'exact',
      advantage: 'grpo',
      loss_agg: 'seq-mean-token-mean',
      max_prompt_tokens: 3,
      max_response_tokens: 5,
      extended: true,
    }),
  ];

  // Per-token PPO-clip loss: ratios inside, above 1+ε_high and below 1−ε_low, for A > 0, A < 0, A = 0.
  const logp = [-1, -0.5, -1.5, -0.5, -1.5, -1, -0.2, -2.3];
  const oldLogp = [-1, -1, -1, -1, -1, -0.9, -0.4, -2];
  const advantage = [1, 1, 1, -1, -1, 0, -0.5, 2];
  const weights = [0.25, 0.125, 0.125, 0.125, 0.125, 0, 0.125, 0.125];
  const loss = ppoClipLoss(logp, oldLogp, advantage, CLIP_LOW, CLIP_HIGH);
  const tisPairs = [
    [-1, -1],
    [-0.5, -1],
    [-1, -0.2],
    [-0.1, -3],
    [-30, -0.1], // old − μ below −20: clamped, exp(−20)
  ];
  const klPairs = [
    [-1, -1],
    [-0.5, -1],
    [-2, -0.7],
  ];

  return {
    description:
      'Shared test vectors of shared/spec/samples.md. `trajectories` are input lines; each case lists the ' +
      'options, the expected SampleJson lines and the summary (cases with max_prompt_tokens etc. use the ' +
      "daemon's extended summary). policy_loss: per-token PPO-clip loss ℓ_t = −min(ratio·A, " +
      'clip(ratio, 1−clip_low, 1+clip_high)·A), ratio = exp(logp − old_logp); clipped marks tokens where ' +
      'the clipped term wins; total = Σ weights·loss. tis: min(exp(clamp20(trainer_old_logp − inference_logp)), cap). ' +
      'kl_k3: exp(ref − logp) − (ref − logp) − 1. token_loss: whole-step cases of the per-token policy loss ' +
      '(logp: the trainer logprob the gradient is taken against; old_logp: its pre-update value; rollout_logp: ' +
      "null when absent, −9999 is vLLM's floor and unknown too; every token listed is trained: mask 1, weight ≠ 0); " +
      'expected.grad = ∂(Σ weights·token_loss)/∂logp per token; validation: the StepValidation of those tokens ' +
      '(over known rollout logprobs; scatter pairs exp(rollout), exp(old)), null when none is known. ' +
      'sequence_loss: the same with policy_ratio "sequence" (GSPO): sequence_ids names each token\'s sequence (a ' +
      "training sample); log s = mean of its tokens' log-ratios d_t (expected.log_ratio; the token-mode " +
      'log-ratio), x_t = lp_t − sg(lp_t) + log s, ℓ_t = PPO-clip(exp(x_t), A_t) · w_t; expected.sequence_log_ratio ' +
      'is log s per token. ' +
      'cispo_loss: token_loss cases with policy_loss "cispo" (CISPO, verl\'s loss_mode cispo): the ratio r_t as in ' +
      'token mode, its weight clip(r_t, 1 − clip_low, 1 + clip_high) detached, ℓ_t = −weight·A_t·lp_t · w_t ' +
      "(dual_clip ignored); clipped where the weight differs from r_t; expected.ppo_grad is the same tokens' " +
      'PPO-clip gradient. ' +
      'scatter: the deterministic subsample of n tokens in batch order: all when n ≤ max, else floor(i·n/max).',
    version: 1,
    adv_eps: ADV_EPS,
    trajectories: vectorTrajectories,
    cases,
    limit_cases: limitCases,
    policy_loss: {
      clip_low: CLIP_LOW,
      clip_high: CLIP_HIGH,
      logp,
      old_logp: oldLogp,
      advantage,
      loss: Array.from(loss),
      clipped: logp.map((l, t) => ppoClipped(l, oldLogp[t], advantage[t], CLIP_LOW, CLIP_HIGH)),
      weights,
      total: weightedLoss(loss, weights),
    },
    tis: {
      cap: TIS_CAP,
      cases: tisPairs.map(([trainer, inference]) => ({
        trainer_old_logp: trainer,
        inference_logp: inference,
        weight: truncatedIsWeight(trainer, inference, TIS_CAP),
      })),
    },
    kl_k3: klPairs.map(([l, ref]) => ({ logp: l, ref_logp: ref, kl: klK3(l, ref) })),
    token_loss: tokenLossCases(),
    sequence_loss: sequenceLossCases(),
    cispo_loss: cispoLossCases(),
    scatter: { n: 1300, max: SCATTER_MAX, indices: scatterIndices(1300) },
  };
}

/** vectors.json as stored (its shape is what generateVectors writes). */
export function readVectors(): ReturnType<typeof generateVectors> {
  return JSON.parse(readFileSync(new URL('./vectors.json', import.meta.url), 'utf8'));
}

if (process.argv[1]?.endsWith('vectors.gen.ts')) {
  const out = new URL('./vectors.json', import.meta.url);
  // one line per array of numbers, so the file stays readable and diffable
  const text = JSON.stringify(generateVectors(), null, 1).replace(
    /\[([^[\]{}]*)\]/g,
    (_, body: string) => `[${body.replace(/\s+/g, '')}]`,
  );
  writeFileSync(out, `${text}\n`);
  process.stdout.write(`wrote ${out.pathname}\n`);
}
