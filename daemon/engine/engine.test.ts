import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Sample, TrainBatch } from '../protocol/training';
import { ppoClipLoss, truncatedIsWeight, weightedLoss } from '../samples/loss';
import { readVectors } from '../samples/vectors.gen';
import { loadLatestCheckpoint } from './checkpoint';
import { GRADIENT_CHECK_MODEL, gradientGap } from './gradient-check';
import { DEFAULT_MODEL_CONFIG, type ReferenceEngine, startReferenceEngine } from './index';
import { initParams } from './layout';
import { Model } from './model';
import { applyChatTemplate, decode, END_ID, encode } from './tokenizer';
import { ppoClipTokenLossAndGrad, sampleLossAndGrad } from './trainer';

// biome-ignore lint/suspicious/noExplicitAny: vLLM's extra fields are not in the SDK's types
type Any = any;

const vectors = readVectors();

const tmp = () => mkdtempSync(join(tmpdir(), 'hrl-engine-'));

describe('tokenizer', () => {
  it('round-trips UTF-8 text and parses special-token strings', () => {
    const text = 'héllo 😀 <|user|>x<|end|>';
    const ids = encode(text);
    expect(decode(ids)).toBe(text);
    expect(ids).toContain(END_ID);
    expect(decode(ids, true)).toBe('héllo 😀 x');
  });
  it('renders the chat template with role markers and a generation prompt', () => {
    const ids = applyChatTemplate([{ role: 'user', content: 'hi' }], true);
    expect(decode(ids)).toBe('<|user|>hi<|end|><|assistant|>');
  });
});

describe('gradients', () => {
  const cfg = GRADIENT_CHECK_MODEL;
  const sample = (T: number): Sample => ({
    rollout_id: 'r',
    group_id: 'g',
    index: 0,
    input_ids: Int32Array.from({ length: T }, (_, i) => (i * 7 + 3) % 23),
    loss_mask: Uint8Array.from({ length: T }, (_, i) => (i >= 3 ? 1 : 0)),
    advantages: Float32Array.from({ length: T }, (_, i) => (i >= 3 ? (i % 2 ? 0.7 : -0.4) : 0)),
    old_logprobs: Float64Array.from({ length: T }, (_, i) => (i >= 3 ? -3.2 + 0.05 * i : Number.NaN)),
    loss_weights: Float64Array.from({ length: T }, (_, i) => (i >= 3 ? 1 / (T - 3) : 0)),
  });

  it.each([1, 0.7])(
    'the analytic gradient of the PPO loss (with KL) at temperature %s matches finite differences',
    (temperature) => {
      const model = new Model(cfg, initParams(cfg, 3));
      for (let i = 0; i < model.params.length; i++) model.params[i] += 0.01 * Math.sin(i);
      const ref = new Model(cfg, initParams(cfg, 4));
      const s = { ...sample(11), temperature };
      const loss = { clip_low: 10, clip_high: 10, tis_cap: null, kl_coef: 0.1, learning_rate: 1e-3 };
      const stats = () => ({ loss: 0, tokens: 0, clipped: 0, kl: 0, entropy: 0 });
      const f = () => {
        const st = stats();
        sampleLossAndGrad(model, s, loss, null, st, ref);
        return st.loss;
      };
      const grad = new Float64Array(model.params.length);
      sampleLossAndGrad(model, s, loss, grad, stats(), ref);
      const { worst, checked } = gradientGap(model.params, f, grad);
      expect(checked).toBeGreaterThan(100);
      expect(worst).toBeLessThan(1e-5);
    },
  );

  it("with the sequence ratio (GSPO, bypass), one advantage and seq-mean weights, the gradient is GSPO's: the finite difference of the loss", () => {
    // log s = mean(lp_t − μ_t) moves with every token's logprob: the GSPO-token gradient −s·A/n per token
    // is the objective's exact gradient when the sequence's tokens share A and weight 1/n (decoupled
    // mode has no such check here: its denominator is lp itself on the engine's one update)
    const model = new Model(cfg, initParams(cfg, 3));
    for (let i = 0; i < model.params.length; i++) model.params[i] += 0.01 * Math.sin(i);
    const s = sample(11);
    s.advantages.forEach((a, i) => {
      s.advantages[i] = a === 0 ? 0 : 0.7;
    });
    const loss = {
      clip_low: 0.2,
      clip_high: 0.28,
      tis_cap: null,
      kl_coef: 0,
      learning_rate: 1e-3,
      policy_ratio: 'sequence' as const,
    };
    const stats = () => ({ loss: 0, tokens: 0, clipped: 0, kl: 0, entropy: 0 });
    const f = () => {
      const st = stats();
      sampleLossAndGrad(model, s, loss, null, st, null);
      return st.loss;
    };
    const st = stats();
    const grad = new Float64Array(model.params.length);
    sampleLossAndGrad(model, s, loss, grad, st, null);
    expect(st.clipped).toBe(0); // s inside the clip range here
    const tokenMode = stats();
    sampleLossAndGrad(model, s, { ...loss, policy_ratio: 'token' }, null, tokenMode, null);
    expect(Math.abs(tokenMode.loss - st.loss)).toBeGreaterThan(1e-6);
    const { worst, checked } = gradientGap(model.params, f, grad);
    expect(checked).toBeGreaterThan(100);
    expect(worst).toBeLessThan(1e-5);
  });

  it("decoupled PPO: ratio 1 against the trainer's own logprob, times samples/loss.ts's TIS weight (trainer vs rollout)", () => {
    const model = new Model(cfg, initParams(cfg, 3));
    const s = sample(11); // its rollout logprobs differ from the model's own
    const loss = { clip_low: 0.2, clip_high: 0.28, tis_cap: 2, kl_coef: 0, learning_rate: 1e-3 };
    const st = { loss: 0, tokens: 0, clipped: 0, kl: 0, entropy: 0 };
    sampleLossAndGrad(model, s, loss, null, st, null);
    const targets = [...s.loss_mask.keys()].filter((t) => s.loss_mask[t]);
    const fw = model.forward(
      s.input_ids,
      targets.map((t) => t - 1),
    );
    const lp = targets.map((t, k) => fw.logp[k * cfg.vocab + s.input_ids[t]]);
    const mu = targets.map((t) => s.old_logprobs[t]);
    const weights = lp.map((l, k) => truncatedIsWeight(l, mu[k], 2));
    expect(weights.some((w) => Math.abs(w - 1) > 0.05)).toBe(true); // the weights matter here
    const tokenLoss = ppoClipLoss(
      lp,
      lp, // the ratio's denominator is the trainer's pre-update logprob: r = 1
      targets.map((t) => s.advantages[t]),
      0.2,
      0.28,
    );
    const want = targets.reduce((sum, t, k) => sum + s.loss_weights[t] * weights[k] * tokenLoss[k], 0);
    expect(st.loss).toBeCloseTo(want, 12);
    expect(st.clipped).toBe(0);
  });

  it('a large train/inference mismatch weighs the gradient by min(π/μ, C), not by its square', () => {
    const model = new Model(cfg, initParams(cfg, 3));
    const one = (mu: (lp: number) => number, A: number, tis_cap: number | null) => {
      const s = sample(6);
      s.loss_mask.fill(0);
      s.loss_mask[5] = 1; // one trained token
      s.advantages[5] = A;
      s.loss_weights.fill(0);
      s.loss_weights[5] = 1;
      const lp = model.forward(s.input_ids, [4]).logp[s.input_ids[5]];
      s.old_logprobs[5] = mu(lp);
      const grad = new Float64Array(model.params.length);
      const loss = { clip_low: 0.2, clip_high: 0.28, tis_cap, kl_coef: 0, learning_rate: 1e-3 };
      sampleLossAndGrad(model, s, loss, grad, { loss: 0, tokens: 0, clipped: 0, kl: 0, entropy: 0 }, null);
      return grad;
    };
    const scale = (a: Float64Array, b: Float64Array) => {
      let ab = 0;
      let bb = 0;
      for (let i = 0; i < a.length; i++) {
        ab += a[i] * b[i];
        bb += b[i] * b[i];
      }
      return ab / bb;
    };
    for (const A of [1, -1]) {
      const onPolicy = one((lp) => lp, A, 2);
      // π/μ = 1.5: weight 1.5 (twice applied: 2.25 for A < 0, and a clipped ratio, no gradient, for A > 0)
      expect(
        scale(
          one((lp) => lp - Math.log(1.5), A, 2),
          onPolicy,
        ),
      ).toBeCloseTo(1.5, 9);
      // π/μ = e³ ≈ 20: capped at C = 2 (twice applied: e³ · 2 ≈ 40 for A < 0)
      expect(
        scale(
          one((lp) => lp - 3, A, 2),
          onPolicy,
        ),
      ).toBeCloseTo(2, 9);
      // vLLM's −9999 floor is an unknown logprob: weight 1, not e^20-capped
      expect(
        scale(
          one(() => -9999, A, 2),
          onPolicy,
        ),
      ).toBeCloseTo(1, 9);
    }
    // bypass mode: the ratio against μ itself, no TIS factor (pessimistic side, A < 0: π/μ = 1.5)
    expect(
      scale(
        one((lp) => lp - Math.log(1.5), -1, null),
        one((lp) => lp, -1, null),
      ),
    ).toBeCloseTo(1.5, 9);
  });

  it("the trainer's logprob at a sample's temperature T is log_softmax(logits / T), with a matching gradient", () => {
    const model = new Model(cfg, initParams(cfg, 3));
    const s = { ...sample(11), temperature: 0.6 };
    const targets = [...s.loss_mask.keys()].filter((t) => s.loss_mask[t]);
    const positions = targets.map((t) => t - 1);
    const at1 = model.forward(s.input_ids, positions); // logits − logsumexp(logits)
    const atT = model.forward(s.input_ids, positions, s.temperature);
    const V = cfg.vocab;
    for (let k = 0; k < positions.length; k++) {
      const z = Array.from(at1.logp.subarray(k * V, (k + 1) * V), (l) => l / s.temperature);
      const m = Math.max(...z);
      const lse = m + Math.log(z.reduce((a, x) => a + Math.exp(x - m), 0));
      for (let j = 0; j < V; j++) expect(atT.logp[k * V + j]).toBeCloseTo(z[j] - lse, 12);
    }
    // the trainer uses it: bypass loss against μ = the T-logprob is exactly −Σ w·A (ratio 1)
    targets.forEach((t, k) => {
      s.old_logprobs[t] = atT.logp[k * V + s.input_ids[t]];
    });
    const loss = { clip_low: 0.2, clip_high: 0.28, tis_cap: null, kl_coef: 0, learning_rate: 1e-3 };
    const st = { loss: 0, tokens: 0, clipped: 0, kl: 0, entropy: 0 };
    sampleLossAndGrad(model, s, loss, null, st, null);
    const want = targets.reduce((sum, t) => sum - s.loss_weights[t] * s.advantages[t], 0);
    expect(st.loss).toBeCloseTo(want, 12);
    expect(st.kl).toBeCloseTo(0, 12);
  });

  it('clipped tokens give no gradient (ℓ = −min(r·A, clip(r, 1−ε_low, 1+ε_high)·A))', () => {
    // r = e^0.5 ≈ 1.65 > 1.28 with A > 0: the clipped branch is the minimum.
    expect(ppoClipTokenLossAndGrad(0, -0.5, 1, 0.2, 0.28)).toEqual({ loss: -1.28, dlogp: 0, clipped: true });
    // r < 1 − ε_low with A < 0: clipped as well.
    const low = ppoClipTokenLossAndGrad(-0.5, 0, -1, 0.2, 0.28);
    expect(low.clipped).toBe(true);
    expect(low.loss).toBeCloseTo(0.8, 12);
    // inside the range: ℓ = −r·A, dℓ/dlogp = −r·A
    const mid = ppoClipTokenLossAndGrad(0.1, 0, 2, 0.2, 0.28);
    expect(mid.clipped).toBe(false);
    expect(mid.loss).toBeCloseTo(-2 * Math.exp(0.1), 12);
    expect(mid.dlogp).toBeCloseTo(-2 * Math.exp(0.1), 12);
    // pessimistic: r > 1 + ε_high with A < 0 is not clipped (the unclipped term is smaller)
    expect(ppoClipTokenLossAndGrad(0.5, 0, -1, 0.2, 0.28).clipped).toBe(false);
  });

  it('dual clip caps the loss of a negative advantage at −c·A with no gradient, as the Python trainer does', () => {
    // the numbers of trainer/tests/test_loss.py: logp 2, old 0 (r = e²), c = 3
    const negative = ppoClipTokenLossAndGrad(2, 0, -1, 0.2, 0.28, 3);
    expect(negative).toEqual({ loss: 3, dlogp: 0, clipped: false });
    expect(ppoClipTokenLossAndGrad(2, 0, -1, 0.2, 0.28).loss).toBeCloseTo(Math.exp(2), 12); // no cap
    // a positive advantage, or a ratio whose loss stays under the cap, is untouched
    expect(ppoClipTokenLossAndGrad(2, 0, 1, 0.2, 0.28, 3)).toEqual(
      ppoClipTokenLossAndGrad(2, 0, 1, 0.2, 0.28),
    );
    const under = ppoClipTokenLossAndGrad(0.5, 0, -1, 0.2, 0.28, 3);
    expect(under.loss).toBeCloseTo(Math.exp(0.5), 12);
    expect(under.dlogp).toBeCloseTo(Math.exp(0.5), 12);
  });

  it("gives the spec's per-token loss and clip flags on the shared vectors (samples/vectors.json)", () => {
    const p = vectors.policy_loss;
    const expected = ppoClipLoss(p.logp, p.old_logp, p.advantage, p.clip_low, p.clip_high);
    const engine = p.logp.map((l, t) =>
      ppoClipTokenLossAndGrad(l, p.old_logp[t], p.advantage[t], p.clip_low, p.clip_high),
    );
    expect(engine.map((r) => r.loss)).toEqual([...expected]);
    expect(engine.map((r) => r.loss)).toEqual(p.loss);
    expect(engine.map((r) => r.clipped)).toEqual(p.clipped);
    // a clipped token gives no gradient; elsewhere dℓ/dlogp = ℓ (ℓ = −r·A)
    for (const r of engine) expect(r.dlogp === (r.clipped ? 0 : r.loss)).toBe(true); // === : −0 equals 0
    expect(
      weightedLoss(
        engine.map((r) => r.loss),
        p.weights,
      ),
    ).toBeCloseTo(p.total, 12);
  });
});

describe('the engine over HTTP', () => {
  let dataDir: string;
  let engine: ReferenceEngine;
  let client: OpenAI;
  beforeAll(async () => {
    dataDir = tmp();
    engine = await startReferenceEngine({ dataDir, seed: 7 });
    client = new OpenAI({ baseURL: engine.url, apiKey: 'none', maxRetries: 0 });
  });
  afterAll(async () => {
    await engine.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const messages: OpenAI.Chat.ChatCompletionMessageParam[] = [{ role: 'user', content: '2+3=?' }];

  it('serves chat completions with prompt/response token ids, logprobs, usage and the model version', async () => {
    const { data, response } = await client.chat.completions
      .create({
        model: 'reference',
        messages,
        max_tokens: 8,
        seed: 1,
        logprobs: true,
        top_logprobs: 2,
        n: 2,
        return_token_ids: true,
      } as Any)
      .withResponse();
    const r = data as Any;
    expect(response.headers.get('x-model-version')).toBe('0');
    expect(r.model_version).toBe(0);
    expect(r.model).toBe('reference');
    expect(r.prompt_token_ids).toEqual(applyChatTemplate([{ role: 'user', content: '2+3=?' }], true));
    expect(r.choices).toHaveLength(2);
    for (const c of r.choices) {
      expect(c.token_ids.length).toBeGreaterThan(0);
      expect(c.token_ids.length).toBeLessThanOrEqual(8);
      expect(c.logprobs.content).toHaveLength(c.token_ids.length);
      expect(c.logprobs.content[0]).toMatchObject({
        token: expect.any(String),
        logprob: expect.any(Number),
        bytes: expect.any(Array),
      });
      expect(c.logprobs.content[0].top_logprobs).toHaveLength(2);
      expect(['stop', 'length']).toContain(c.finish_reason);
      expect(c.message.content).toBe(decode(c.token_ids, true));
      if (c.finish_reason === 'stop') expect(c.token_ids.at(-1)).toBe(END_ID);
    }
    const completion = r.choices.reduce((s: number, c: Any) => s + c.token_ids.length, 0);
    expect(r.usage).toEqual({
      prompt_tokens: r.prompt_token_ids.length,
      completion_tokens: completion,
      total_tokens: r.prompt_token_ids.length + completion,
    });
  });

  it('streams the same tokens as the non-streamed response for the same seed', async () => {
    const body = {
      model: 'reference',
      messages,
      max_tokens: 12,
      seed: 42,
      temperature: 1,
      return_token_ids: true,
      logprobs: true,
    } as Any;
    const whole = (await client.chat.completions.create(body)) as Any;
    const stream = (await client.chat.completions.create({
      ...body,
      stream: true,
      stream_options: { include_usage: true },
    })) as Any;
    const ids: number[] = [];
    const lps: number[] = [];
    let text = '';
    let prompt: number[] | undefined;
    let finish: string | null = null;
    let usage: Any = null;
    let chunks = 0;
    for await (const chunk of stream) {
      if (chunks++ === 0) prompt = chunk.prompt_token_ids;
      if (chunk.usage) usage = chunk.usage;
      for (const c of chunk.choices) {
        ids.push(...(c.token_ids ?? []));
        for (const l of c.logprobs?.content ?? []) lps.push(l.logprob);
        text += c.delta.content ?? '';
        finish = c.finish_reason ?? finish;
      }
    }
    expect(prompt).toEqual(whole.prompt_token_ids);
    expect(ids).toEqual(whole.choices[0].token_ids);
    expect(lps).toEqual(whole.choices[0].logprobs.content.map((c: Any) => c.logprob));
    expect(text).toBe(whole.choices[0].message.content);
    expect(finish).toBe(whole.choices[0].finish_reason);
    expect(usage.completion_tokens).toBe(ids.length);
  });

  it('is deterministic for a seed, and n choices differ', async () => {
    const body = {
      model: 'reference',
      messages,
      max_tokens: 16,
      seed: 5,
      n: 3,
      return_token_ids: true,
    } as Any;
    const a = (await client.chat.completions.create(body)) as Any;
    const b = (await client.chat.completions.create(body)) as Any;
    expect(a.choices.map((c: Any) => c.token_ids)).toEqual(b.choices.map((c: Any) => c.token_ids));
    const distinct = new Set(a.choices.map((c: Any) => JSON.stringify(c.token_ids)));
    expect(distinct.size).toBeGreaterThan(1);
  });

  it('completes token-id prompts, with completions-style logprobs, and stops at stop strings', async () => {
    const prompt = applyChatTemplate([{ role: 'user', content: '1+1=?' }], true);
    const r = (await client.completions.create({
      model: 'reference',
      prompt,
      max_tokens: 6,
      seed: 3,
      logprobs: 1,
      return_token_ids: true,
    } as Any)) as Any;
    expect(r.prompt_token_ids).toEqual(prompt);
    const c = r.choices[0];
    expect(c.prompt_token_ids).toEqual(prompt);
    expect(c.logprobs.token_logprobs).toHaveLength(c.token_ids.length);
    expect(c.logprobs.tokens).toHaveLength(c.token_ids.length);
    // Greedy with a stop string made of the first greedy character: text is cut before it.
    const greedy = (await client.completions.create({
      model: 'reference',
      prompt: '<|user|>hi<|end|><|assistant|>',
      max_tokens: 6,
      temperature: 0,
      return_token_ids: true,
    } as Any)) as Any;
    const first = decode([greedy.choices[0].token_ids[0]], true);
    if (first.length > 0 && greedy.choices[0].token_ids[0] !== END_ID) {
      const cut = (await client.completions.create({
        model: 'reference',
        prompt: '<|user|>hi<|end|><|assistant|>',
        max_tokens: 6,
        temperature: 0,
        stop: [first],
      })) as Any;
      expect(cut.choices[0].text).toBe('');
      expect(cut.choices[0].finish_reason).toBe('stop');
    }
  });

  it('tokenize and detokenize round-trip text and chat messages', async () => {
    const post = async (path: string, body: unknown) => {
      const res = await fetch(engine.url.replace(/\/v1$/, '') + path, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      return { status: res.status, json: (await res.json()) as Any };
    };
    const t = await post('/tokenize', { prompt: 'ünï <|end|>' });
    expect(t.status).toBe(200);
    expect(t.json.count).toBe(t.json.tokens.length);
    expect(t.json.max_model_len).toBe(DEFAULT_MODEL_CONFIG.maxLen);
    expect((await post('/detokenize', { tokens: t.json.tokens })).json.prompt).toBe('ünï <|end|>');
    const chat = await post('/tokenize', { messages, add_generation_prompt: true });
    expect(chat.json.tokens).toEqual(applyChatTemplate([{ role: 'user', content: '2+3=?' }], true));
    expect((await post('/detokenize', { tokens: [999999] })).status).toBe(400);
  });

  it('lists the served model and answers health checks', async () => {
    const models = await client.models.list();
    expect(models.data.map((m) => m.id)).toEqual(['reference']);
    const health = await fetch(engine.url.replace(/\/v1$/, '') + '/health');
    expect(health.status).toBe(200);
  });

  it('rejects bad requests with 4xx errors that name the problem', async () => {
    await expect(client.chat.completions.create({ model: 'reference', messages: [] })).rejects.toMatchObject({
      status: 400,
    });
    await expect(client.chat.completions.create({ model: 'gpt-x', messages })).rejects.toMatchObject({
      status: 404,
    });
    const long = 'x'.repeat(DEFAULT_MODEL_CONFIG.maxLen);
    await expect(
      client.chat.completions.create({ model: 'reference', messages: [{ role: 'user', content: long }] }),
    ).rejects.toThrow(/maximum context length/);
    const res = await fetch(`${engine.url}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"messages": [{"role": "user", "content": "x"}], "temperature": "hot"}',
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as Any).error.message).toMatch(/temperature/);
  });

  it("sampling-time logprobs equal the trainer's recomputed logprobs, before and after a train step", async () => {
    const check = async (model: Model) => {
      const r = (await client.chat.completions.create({
        model: 'reference',
        messages,
        max_tokens: 10,
        seed: 11,
        n: 4,
        logprobs: true,
        return_token_ids: true,
      } as Any)) as Any;
      for (const c of r.choices) {
        const ids = [...r.prompt_token_ids, ...c.token_ids];
        const P = r.prompt_token_ids.length;
        const positions = c.token_ids.map((_: number, i: number) => P + i - 1);
        const fw = model.forward(ids, positions);
        c.token_ids.forEach((tok: number, i: number) => {
          expect(
            Math.abs(fw.logp[i * model.config.vocab + tok] - c.logprobs.content[i].logprob),
          ).toBeLessThan(1e-5);
        });
      }
      return r;
    };
    const r = await check(new Model(DEFAULT_MODEL_CONFIG, initParams(DEFAULT_MODEL_CONFIG, 7)));
    // one PPO step on that rollout, then compare against the saved weights of the new version
    const c = r.choices[0];
    const ids = [...r.prompt_token_ids, ...c.token_ids];
    const mask = ids.map((_, i) => (i >= r.prompt_token_ids.length ? 1 : 0));
    const batch: TrainBatch = {
      run_id: 'x',
      step: 0,
      model_version: 0,
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
            ids.map((_, i) =>
              mask[i] ? c.logprobs.content[i - r.prompt_token_ids.length].logprob : Number.NaN,
            ),
          ),
          loss_weights: Float64Array.from(mask.map((m) => m / c.token_ids.length)),
        },
      ],
    };
    const result = await engine.trainer.train(batch);
    expect(result.model_version).toBe(1);
    expect(result.tokens).toBe(c.token_ids.length);
    expect(result.kl).toBeLessThan(1e-9); // rollout and trainer agree before the update
    expect(engine.version()).toBe(1);
    const ck = await loadLatestCheckpoint(join(dataDir, 'engine'));
    expect(ck).toBeNull();
    await engine.checkpoint();
    const saved = await loadLatestCheckpoint(join(dataDir, 'engine'));
    expect(saved?.version).toBe(1);
    await check(new Model(saved!.config, saved!.params));
    // the advantage-1 tokens became more likely
    const after = new Model(saved!.config, saved!.params).forward(
      ids,
      ids.slice(1).map((_, i) => i),
    );
    let gain = 0;
    for (let t = r.prompt_token_ids.length; t < ids.length; t++)
      gain += after.logp[(t - 1) * saved!.config.vocab + ids[t]] - batch.samples[0].old_logprobs[t];
    expect(gain).toBeGreaterThan(0);
  });

  it('a checkpoint restores the version and identical logprobs in a new engine', async () => {
    const body = {
      model: 'reference',
      messages,
      max_tokens: 10,
      seed: 9,
      logprobs: true,
      return_token_ids: true,
    } as Any;
    const before = (await client.chat.completions.create(body)) as Any;
    await engine.checkpoint();
    const again = await startReferenceEngine({ dataDir, seed: 123, resume: true });
    try {
      expect(again.version()).toBe(engine.version());
      const c2 = new OpenAI({ baseURL: again.url, apiKey: 'none', maxRetries: 0 });
      const after = (await c2.chat.completions.create(body)) as Any;
      expect(after.model_version).toBe(engine.version());
      expect(after.choices[0].token_ids).toEqual(before.choices[0].token_ids);
      expect(after.choices[0].logprobs.content.map((x: Any) => x.logprob)).toEqual(
        before.choices[0].logprobs.content.map((x: Any) => x.logprob),
      );
    } finally {
      await again.close();
    }
  });
});

describe('trainer input checks', () => {
  it('rejects a batch with out-of-vocabulary token ids and leaves the weights and version unchanged', async () => {
    const dataDir = tmp();
    const engine = await startReferenceEngine({
      dataDir,
      seed: 1,
      config: { dModel: 8, dFf: 8, maxLen: 32 },
    });
    try {
      const bad: Sample = {
        rollout_id: 'r',
        group_id: 'g',
        index: 0,
        input_ids: Int32Array.from([1, 2, 100000]),
        loss_mask: Uint8Array.from([0, 1, 1]),
        advantages: Float32Array.from([0, 1, 1]),
        old_logprobs: Float64Array.from([Number.NaN, -1, -1]),
        loss_weights: Float64Array.from([0, 0.5, 0.5]),
      };
      const ok: Sample = { ...bad, input_ids: Int32Array.from([1, 2, 3]) };
      const batch = (samples: Sample[]): TrainBatch => ({
        run_id: 'x',
        step: 0,
        model_version: 0,
        loss: { clip_low: 0.2, clip_high: 0.28, tis_cap: null, kl_coef: 0, learning_rate: 0.01 },
        samples,
      });
      await expect(engine.trainer.train(batch([ok, bad]))).rejects.toThrow(/outside the vocabulary/);
      expect(engine.version()).toBe(0);
      expect((await engine.trainer.train(batch([ok]))).model_version).toBe(1);
    } finally {
      await engine.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
