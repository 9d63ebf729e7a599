// The reference engine's trainer reports each step's train/inference agreement (StepValidation) from its
// own pre-update logprobs against the rollout logprobs the engine served.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TrainBatch } from '../protocol/training';
import { type ReferenceEngine, startReferenceEngine } from './index';

// biome-ignore lint/suspicious/noExplicitAny: vLLM's extra fields are not in the SDK's types
type Any = any;

describe('the reference trainer reports train/inference agreement', () => {
  let dataDir: string;
  let engine: ReferenceEngine;
  let client: OpenAI;
  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'hrl-validation-'));
    engine = await startReferenceEngine({ dataDir, seed: 5 });
    client = new OpenAI({ baseURL: engine.url, apiKey: 'none', maxRetries: 0 });
  });
  afterAll(async () => {
    await engine.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  /** One sampled response as a batch whose rollout logprobs are the served ones, changed by `mu`. */
  async function batchOf(mu: (lp: number, i: number) => number): Promise<{ batch: TrainBatch; n: number }> {
    const r = (await client.chat.completions.create({
      model: 'reference',
      messages: [{ role: 'user', content: '7+5=?' }],
      max_tokens: 12,
      seed: 3,
      logprobs: true,
      return_token_ids: true,
    } as Any)) as Any;
    const c = r.choices[0];
    const P = r.prompt_token_ids.length;
    const ids: number[] = [...r.prompt_token_ids, ...c.token_ids];
    const mask = ids.map((_, i) => (i >= P ? 1 : 0));
    const batch: TrainBatch = {
      run_id: 'x',
      step: 0,
      model_version: engine.version(),
      loss: { clip_low: 0.2, clip_high: 0.28, tis_cap: 2, kl_coef: 0, learning_rate: 0.01 },
      samples: [
        {
          rollout_id: 'r',
          group_id: 'g',
          index: 0,
          input_ids: Int32Array.from(ids),
          loss_mask: Uint8Array.from(mask),
          advantages: Float32Array.from(mask),
          old_logprobs: Float64Array.from(
            ids.map((_, i) => (mask[i] ? mu(c.logprobs.content[i - P].logprob, i - P) : Number.NaN)),
          ),
          loss_weights: Float64Array.from(mask.map((m) => m / c.token_ids.length)),
        },
      ],
    };
    return { batch, n: c.token_ids.length };
  }

  it('agrees with the logprobs it served: diff under 1e-5, weight 1, nothing capped', async () => {
    const { batch, n } = await batchOf((lp) => lp);
    const v = (await engine.trainer.train(batch)).validation!;
    expect(v.tokens).toBe(n);
    expect(v.logprob_diff_max).toBeLessThan(1e-5);
    expect(v.tis_weight_mean).toBeCloseTo(1, 4);
    expect(v.tis_capped_fraction).toBe(0);
    if (v.prob_correlation !== null) expect(v.prob_correlation).toBeGreaterThan(0.9999);
    expect(v.scatter).toHaveLength(n);
    for (const [rollout, trainer] of v.scatter) expect(Math.abs(rollout - trainer)).toBeLessThan(1e-3);
  });

  it('measures a rollout that claims each token 0.7 nats likelier than the trainer finds it, skipping vLLM floors', async () => {
    // served by the new version: the trainer's pre-update logprobs are those, the rollout's are +0.7
    const { batch, n } = await batchOf((lp, i) => (i === 0 ? -9999 : lp + 0.7));
    const v = (await engine.trainer.train(batch)).validation!;
    expect(v.tokens).toBe(n - 1);
    expect(v.logprob_diff_mean).toBeCloseTo(0.7, 4);
    expect(v.logprob_diff_max).toBeCloseTo(0.7, 4);
    expect(v.tis_weight_mean).toBeCloseTo(Math.exp(-0.7), 4);
    expect(v.tis_capped_fraction).toBe(0);
  });

  it('reports no validation for a batch without rollout logprobs', async () => {
    const { batch } = await batchOf(() => Number.NaN);
    expect((await engine.trainer.train(batch)).validation).toBeNull();
  });
});
