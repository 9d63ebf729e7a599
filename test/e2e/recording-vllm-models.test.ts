// A recording whose upstream is the user's own vLLM: an agent's built-in model names (Claude Code's
// Haiku side calls, Gemini CLI's flash-lite router and pro model) reach the vLLM as the name it serves,
// as they do through the pool on a rollout, instead of vLLM's 404 for a name it does not serve.
import Anthropic from '@anthropic-ai/sdk';
import { describe, expect, it } from 'vitest';
import { proxyOnFakeVllm } from './proxy-setup';

const env = proxyOnFakeVllm();

async function vllmRecording() {
  const rec = await env.proxy.store.createRecording({
    name: 'own vLLM',
    upstream: { kind: 'vllm', base_url: env.fake.url },
  });
  return rec;
}

describe('a recording on a vLLM upstream', () => {
  it("an agent's model names the vLLM does not serve are sent as the one it serves; its own name unchanged", async () => {
    const rec = await vllmRecording();
    const anthropic = new Anthropic({ apiKey: rec.key, baseURL: env.proxy.url, maxRetries: 0 });
    const side = await anthropic.messages.create({
      model: 'claude-haiku-4-5-20251001',
      max_tokens: 50,
      messages: [{ role: 'user', content: 'a title please' }],
    });
    expect(side.content).toEqual([{ type: 'text', text: 'echo: a title please' }]);
    expect(env.fake.produced.at(-1)?.request.model).toBe('toy');

    for (const model of ['gemini-3.5-flash-lite', 'gemini-3.1-pro-preview']) {
      const res = await fetch(`${env.proxy.url}/v1beta/models/${model}:generateContent`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-goog-api-key': rec.key },
        body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'hello gemini' }] }] }),
      });
      expect(res.status).toBe(200);
      expect(env.fake.produced.at(-1)?.request.model).toBe('toy');
    }

    await anthropic.messages.create({
      model: 'toy',
      max_tokens: 50,
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(env.fake.produced.at(-1)?.request.model).toBe('toy');

    const calls = await env.proxy.store.listRecordingCalls(rec.id);
    expect(calls.map((c) => [c.wire_api, c.status, c.model])).toEqual([
      ['messages', 'ok', 'toy'],
      ['gemini', 'ok', 'toy'],
      ['gemini', 'ok', 'toy'],
      ['messages', 'ok', 'toy'],
    ]);
    // the request as the agent sent it keeps its name, and the side calls are tagged by it: the Haiku
    // call, and Gemini CLI's router (flash-lite); its main model is not
    expect((calls[0].request as { model: string }).model).toBe('claude-haiku-4-5-20251001');
    expect(calls.map((c) => c.tags.includes('side'))).toEqual([true, true, false, false]);
  });

  it('count_tokens with a name the vLLM does not serve is counted', async () => {
    const rec = await vllmRecording();
    const anthropic = new Anthropic({ apiKey: rec.key, baseURL: env.proxy.url, maxRetries: 0 });
    const counted = await anthropic.messages.countTokens({
      model: 'claude-haiku-4-5-20251001',
      messages: [{ role: 'user', content: 'count me' }],
    });
    expect(counted.input_tokens).toBeGreaterThan(0);
  });
});
