// Reference engine throughput: sampling through the HTTP API (a batch of concurrent chat requests, as a
// GRPO step makes them) and PPO training steps on batches shaped like the math agent's.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startReferenceEngine } from '../daemon/engine/index';
import type { Sample } from '../daemon/protocol/training';
import { emit, round } from './emit';

export default async function bench(): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'hrl-bench-engine-'));
  const engine = await startReferenceEngine({ dataDir, seed: 1, resume: false });
  try {
    const requests = 32;
    const maxTokens = 32;
    const call = (i: number) =>
      fetch(`${engine.url}/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          model: 'reference',
          messages: [{ role: 'user', content: `What is ${i % 10}+${(i * 3) % 10}? Answer with one digit.` }],
          max_tokens: maxTokens,
          seed: i,
          logprobs: true,
          return_token_ids: true,
        }),
      }).then((r) => r.json() as Promise<{ prompt_token_ids: number[]; choices: { token_ids: number[] }[] }>);
    await Promise.all(Array.from({ length: 4 }, (_, i) => call(i))); // warm up
    let t0 = performance.now();
    const results = await Promise.all(Array.from({ length: requests }, (_, i) => call(i)));
    let secs = (performance.now() - t0) / 1000;
    const generated = results.reduce((s, r) => s + r.choices[0].token_ids.length, 0);
    const prompt = results.reduce((s, r) => s + r.prompt_token_ids.length, 0);
    emit('engine.generate', {
      requests,
      tokens: generated,
      prompt_tokens: prompt,
      seconds: round(secs),
      tokens_per_s: round(generated / secs, 1),
      prompt_and_generated_per_s: round((generated + prompt) / secs, 1),
    });

    // Training: samples made from those rollouts (prompt mask 0, response mask 1, random advantages).
    const samples: Sample[] = results.map((r, i) => {
      const ids = [...r.prompt_token_ids, ...r.choices[0].token_ids];
      const mask = ids.map((_, t) => (t >= r.prompt_token_ids.length ? 1 : 0));
      return {
        rollout_id: String(i),
        group_id: String(i >> 3),
        index: 0,
        input_ids: Int32Array.from(ids),
        loss_mask: Uint8Array.from(mask),
        advantages: Float32Array.from(mask.map((m) => m * (i % 2 ? 1 : -1))),
        old_logprobs: new Float64Array(ids.length).fill(Number.NaN),
        loss_weights: Float64Array.from(mask.map((m) => m / generated)),
      };
    });
    const steps = 3;
    let tokens = 0;
    let total = 0;
    t0 = performance.now();
    for (let s = 0; s < steps; s++) {
      const r = await engine.trainer.train({
        run_id: 'bench',
        step: s,
        model_version: engine.version(),
        loss: { clip_low: 0.2, clip_high: 0.28, tis_cap: 2, kl_coef: 0, learning_rate: 1e-3 },
        samples,
      });
      tokens += r.tokens;
      total += samples.reduce((a, x) => a + x.input_ids.length, 0);
    }
    secs = (performance.now() - t0) / 1000;
    emit('engine.train', {
      steps,
      samples: samples.length,
      seconds: round(secs),
      tokens_per_s: round(tokens / secs, 1),
      sequence_tokens_per_s: round(total / secs, 1),
    });
  } finally {
    await engine.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}
