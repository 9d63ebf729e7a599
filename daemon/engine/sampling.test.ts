// The reference engine samples with what a request asks for — temperature, min-p, top-k, top-p — and
// records the raw model logprob (vLLM's default raw_logprobs, vllm/config/model.py:305); a penalty it
// cannot apply is refused, never ignored, so a call's recorded sampling is what it sampled with.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sampleToken } from './generate';
import { type ReferenceEngine, startReferenceEngine } from './index';
import { Rng } from './rng';

const logp = Float64Array.from([0.5, 0.3, 0.15, 0.05], Math.log);

function draws(cut: { topK: number; minP: number }, topP = 1, n = 400): Set<number> {
  const rng = new Rng(1);
  const seen = new Set<number>();
  for (let i = 0; i < n; i++) seen.add(sampleToken(logp, 1, topP, rng, cut));
  return seen;
}

describe('reference engine sampling', () => {
  it('top-k keeps the k most likely tokens, min-p those at least min_p × the most likely, none of it by default', () => {
    expect(draws({ topK: 0, minP: 0 })).toEqual(new Set([0, 1, 2, 3]));
    expect(draws({ topK: 2, minP: 0 })).toEqual(new Set([0, 1]));
    expect(draws({ topK: 0, minP: 0.5 })).toEqual(new Set([0, 1])); // 0.15 < 0.5 × 0.5
    expect(draws({ topK: 3, minP: 0 }, 0.6)).toEqual(new Set([0, 1]));
  });

  describe('over HTTP', () => {
    let dataDir: string;
    let engine: ReferenceEngine;
    beforeAll(async () => {
      dataDir = mkdtempSync(join(tmpdir(), 'hrl-engine-sampling-'));
      engine = await startReferenceEngine({ dataDir, seed: 7 });
    });
    afterAll(async () => {
      await engine.close();
      rmSync(dataDir, { recursive: true, force: true });
    });
    const chat = async (extra: Record<string, unknown>) => {
      const res = await fetch(`${engine.url}/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          messages: [{ role: 'user', content: '2+3=?' }],
          max_tokens: 12,
          logprobs: true,
          top_logprobs: 1,
          seed: 3,
          ...extra,
        }),
      });
      type Entry = { token: string; logprob: number; top_logprobs: { token: string; logprob: number }[] };
      return {
        status: res.status,
        body: (await res.json()) as { choices: { logprobs: { content: Entry[] } }[] },
      };
    };

    it('top_k 1 samples the most likely token at any temperature, and still records its raw logprob', async () => {
      const { status, body } = await chat({ temperature: 5, top_k: 1 });
      expect(status).toBe(200);
      for (const e of body.choices[0].logprobs.content) {
        expect(e.top_logprobs[0].token).toBe(e.token);
        expect(e.logprob).toBe(e.top_logprobs[0].logprob); // log p at T 1, not at T 5 after truncation
      }
    });

    it('a penalty it cannot apply is a 400 naming the field; the neutral value passes', async () => {
      for (const [field, value] of [
        ['repetition_penalty', 1.1],
        ['presence_penalty', 0.5],
        ['frequency_penalty', 0.5],
      ] as const) {
        const r = await chat({ [field]: value });
        expect(r.status, field).toBe(400);
        expect(JSON.stringify(r.body)).toContain(field);
      }
      expect((await chat({ repetition_penalty: 1, presence_penalty: 0, frequency_penalty: 0 })).status).toBe(
        200,
      );
    });
  });
});
