// The proxy inside the real daemon (startTestDaemon): rollouts and recordings created over the REST API,
// the official SDKs pointed at the base URLs the API hands out, calls visible in the rollout detail.
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeVllm, startFakeVllm } from '../fixtures/fake-vllm';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon';

let fake: FakeVllm;
let daemon: TestDaemon;

beforeAll(async () => {
  fake = await startFakeVllm({ model: 'toy' });
  daemon = await startTestDaemon({ backends: [fake.url] });
});
afterAll(async () => {
  await daemon?.close();
  await fake?.close();
});

describe('the proxy in the daemon', () => {
  it('a rollout created over the API records its calls token-exact, for OpenAI and Anthropic clients', async () => {
    const created = await daemon.api('POST', '/api/rollouts', {});
    expect(created.status).toBe(201);
    const { id, key, openai_base_url, anthropic_base_url } = created.body;
    const openai = new OpenAI({ baseURL: openai_base_url, apiKey: key, maxRetries: 0 });
    const res = await openai.chat.completions.create({
      model: 'toy',
      messages: [{ role: 'user', content: 'via daemon' }],
    });
    expect(res.choices[0].message.content).toBe('echo: via daemon');
    const p1 = fake.produced.at(-1);
    const anthropic = new Anthropic({ baseURL: anthropic_base_url, apiKey: key, maxRetries: 0 });
    const msg = await anthropic.messages.create({
      model: 'toy',
      max_tokens: 50,
      messages: [{ role: 'user', content: 'claude' }],
    });
    expect(msg.content[0]).toMatchObject({ type: 'text', text: 'echo: claude' });
    const models = await openai.models.list();
    expect(models.data.map((m) => m.id)).toEqual(['toy']);

    const detail = await daemon.api('GET', `/api/rollouts/${id}`);
    expect(detail.status).toBe(200);
    const calls = detail.body.llm_calls;
    expect(calls.map((c: { wire_api: string }) => c.wire_api)).toEqual(['chat', 'messages']);
    expect(calls[0].prompt_ids).toEqual(p1?.prompt_ids);
    expect(calls[0].response_ids).toEqual(p1?.choices[0].ids);
    expect(calls[0].attempt_id).toBe(detail.body.attempts[0].id);
    expect(JSON.stringify(calls)).not.toContain(key);
  });

  it('a recording started over the API captures unscoped calls made with its key', async () => {
    const rec = await daemon.api('POST', '/api/recordings', { name: 'session' });
    expect(rec.status).toBe(201);
    const client = new OpenAI({ baseURL: rec.body.openai_base_url, apiKey: rec.body.key, maxRetries: 0 });
    const res = await client.chat.completions.create({
      model: 'toy',
      messages: [{ role: 'user', content: 'recorded' }],
    });
    expect(res.choices[0].message.content).toBe('echo: recorded');
    const detail = await daemon.api('GET', `/api/recordings/${rec.body.id}`);
    expect(detail.body.calls).toHaveLength(1);
    expect(detail.body.calls[0].response_ids).toEqual(fake.produced.at(-1)?.choices[0].ids);
    await daemon.api('POST', `/api/recordings/${rec.body.id}/stop`, {});
  });
});
