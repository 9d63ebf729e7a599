// The token-in-token-out bridge in the proxy: a run rollout (algorithm.tito, the default) whose harness
// resends its history as text gets the recorded tokens reused, sent to /v1/completions as token ids.
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RunConfig } from '../../daemon/protocol/config';
import { type FakeVllm, startFakeVllm } from '../fixtures/fake-vllm';
import { startTestProxy, type TestProxy } from './proxy-setup';

let fake: FakeVllm;
let proxy: TestProxy;

beforeAll(async () => {
  fake = await startFakeVllm({ model: 'toy' });
  proxy = await startTestProxy({ backends: [fake.url] });
});
afterAll(async () => {
  await proxy?.close();
  await fake?.close();
});

async function runRollout(tito: boolean) {
  const config = RunConfig.parse({
    name: 'tito',
    model: { name: 'toy' },
    tasks: { file: 'x.jsonl' },
    algorithm: { tito },
  });
  const run = await proxy.store.createRun({ name: 'tito', config });
  const r = await proxy.store.createRollout({ kind: 'run', run_id: run.id });
  await proxy.store.startAttempt(r.id, 'test');
  const client = new OpenAI({ baseURL: `${proxy.url}/r/${r.id}/v1`, apiKey: r.key, maxRetries: 0 });
  return { id: r.id, client };
}

describe('token-in-token-out bridge', () => {
  it('a resent history reuses the sampled tokens: the next prompt extends the previous prompt and response', async () => {
    const { id, client } = await runRollout(true);
    const m1: OpenAI.Chat.ChatCompletionMessageParam[] = [{ role: 'user', content: 'hello' }];
    const r1 = await client.chat.completions.create({ model: 'toy', messages: m1 });
    const m2: OpenAI.Chat.ChatCompletionMessageParam[] = [
      ...m1,
      { role: 'assistant', content: r1.choices[0].message.content },
      { role: 'user', content: 'again' },
    ];
    const r2 = await client.chat.completions.create({ model: 'toy', messages: m2 });
    expect(r2.object).toBe('chat.completion');
    expect(typeof r2.choices[0].message.content).toBe('string');
    const p2 = fake.produced.at(-1);
    expect(p2?.path).toBe('/v1/completions');

    const m3: OpenAI.Chat.ChatCompletionMessageParam[] = [
      ...m2,
      { role: 'assistant', content: r2.choices[0].message.content },
      { role: 'user', content: 'and stream' },
    ];
    const stream = await client.chat.completions.create({ model: 'toy', messages: m3, stream: true });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
    const p3 = fake.produced.at(-1);
    expect(p3?.path).toBe('/v1/completions');

    const calls = await proxy.calls(id);
    expect(calls.map((c) => c.token_source)).toEqual(['backend', 'bridge', 'bridge']);
    expect(calls[0].bridge).toEqual({ fallback: 'no previous call' });
    const [c1, c2, c3] = calls;
    const prefix1 = [...(c1.prompt_ids ?? []), ...(c1.response_ids ?? [])];
    expect(c2.prompt_ids?.slice(0, prefix1.length)).toEqual(prefix1);
    expect(c2.bridge).toMatchObject({ reused_tokens: prefix1.length });
    // What was stored is exactly what the backend got and produced.
    expect(c2.prompt_ids).toEqual(p2?.prompt_ids);
    expect(c2.response_ids).toEqual(p2?.choices[0].ids);
    expect(c2.response_logprobs).toEqual(p2?.choices[0].logprobs);
    expect((c2.backend_request as { prompt: number[] }).prompt).toEqual(p2?.prompt_ids);
    expect(c3.stream).toBe(true);
    expect(c3.prompt_ids).toEqual(p3?.prompt_ids);
    expect(c3.response_ids).toEqual(p3?.choices[0].ids);
    const prefix2 = [...(c2.prompt_ids ?? []), ...(c2.response_ids ?? [])];
    expect(c3.prompt_ids?.slice(0, prefix2.length)).toEqual(prefix2);
    expect((c3.response as { choices: { message: { content: string } }[] }).choices[0].message.content).toBe(
      text,
    );
  });

  it('an edited history falls back to the chat endpoint and says why', async () => {
    const { id, client } = await runRollout(true);
    const r1 = await client.chat.completions.create({
      model: 'toy',
      messages: [{ role: 'user', content: 'one' }],
    });
    await client.chat.completions.create({
      model: 'toy',
      messages: [
        { role: 'user', content: 'one, edited' },
        { role: 'assistant', content: r1.choices[0].message.content },
        { role: 'user', content: 'two' },
      ],
    });
    expect(fake.produced.at(-1)?.path).toBe('/v1/chat/completions');
    const calls = await proxy.calls(id);
    expect(calls[1].token_source).toBe('backend');
    expect((calls[1].bridge as { fallback: string }).fallback).toMatch(/history edited/);
  });

  it('a run with tito off never bridges', async () => {
    const { id, client } = await runRollout(false);
    const r1 = await client.chat.completions.create({
      model: 'toy',
      messages: [{ role: 'user', content: 'one' }],
    });
    await client.chat.completions.create({
      model: 'toy',
      messages: [
        { role: 'user', content: 'one' },
        { role: 'assistant', content: r1.choices[0].message.content },
        { role: 'user', content: 'two' },
      ],
    });
    expect(fake.produced.at(-1)?.path).toBe('/v1/chat/completions');
    const calls = await proxy.calls(id);
    expect(calls.map((c) => [c.token_source, c.bridge])).toEqual([
      ['backend', null],
      ['backend', null],
    ]);
  });
});
