// The token-in-token-out bridge in the proxy: a run rollout (algorithm.tito, the default) whose harness
// resends its history as text gets the recorded tokens reused, sent to /v1/completions as token ids.
import type OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { proxyOnFakeVllm } from './proxy-setup';

const env = proxyOnFakeVllm();

const runRollout = (tito: boolean) => env.proxy.runRollout('tito', { tito });

/** Ask "one", then resend the history with its first user message as `resent` and ask "two". */
async function twoTurns(client: OpenAI, resent: string) {
  const r1 = await client.chat.completions.create({
    model: 'toy',
    messages: [{ role: 'user', content: 'one' }],
  });
  await client.chat.completions.create({
    model: 'toy',
    messages: [
      { role: 'user', content: resent },
      { role: 'assistant', content: r1.choices[0].message.content },
      { role: 'user', content: 'two' },
    ],
  });
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
    const p2 = env.fake.produced.at(-1);
    expect(p2?.path).toBe('/v1/completions');

    const m3: OpenAI.Chat.ChatCompletionMessageParam[] = [
      ...m2,
      { role: 'assistant', content: r2.choices[0].message.content },
      { role: 'user', content: 'and stream' },
    ];
    const stream = await client.chat.completions.create({ model: 'toy', messages: m3, stream: true });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
    const p3 = env.fake.produced.at(-1);
    expect(p3?.path).toBe('/v1/completions');

    const calls = await env.proxy.calls(id);
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
    await twoTurns(client, 'one, edited');
    expect(env.fake.produced.at(-1)?.path).toBe('/v1/chat/completions');
    const calls = await env.proxy.calls(id);
    expect(calls[1].token_source).toBe('backend');
    expect((calls[1].bridge as { fallback: string }).fallback).toMatch(/history edited/);
  });

  it('a standalone rollout bridges by default; one created with tito: false never does', async () => {
    const on = await env.proxy.rollout();
    await twoTurns(on.client, 'one');
    expect((await env.proxy.calls(on.id)).map((c) => c.token_source)).toEqual(['backend', 'bridge']);
    expect(env.fake.produced.at(-1)?.path).toBe('/v1/completions');
    const off = await env.proxy.rollout({ tito: false });
    await twoTurns(off.client, 'one');
    expect((await env.proxy.calls(off.id)).map((c) => [c.token_source, c.bridge])).toEqual([
      ['backend', null],
      ['backend', null],
    ]);
    expect(env.fake.produced.at(-1)?.path).toBe('/v1/chat/completions');
  });

  it("a side call between two turns (another conversation: a title) does not break the main conversation's bridge", async () => {
    const { id, client } = await env.proxy.rollout();
    const m1: OpenAI.Chat.ChatCompletionMessageParam[] = [{ role: 'user', content: 'fix the bug' }];
    const r1 = await client.chat.completions.create({ model: 'toy', messages: m1 });
    await client.chat.completions.create({
      model: 'toy',
      messages: [
        { role: 'system', content: 'Write a 5-word title for this conversation.' },
        { role: 'user', content: 'fix the bug' },
      ],
    });
    await client.chat.completions.create({
      model: 'toy',
      messages: [
        ...m1,
        { role: 'assistant', content: r1.choices[0].message.content },
        { role: 'user', content: 'go on' },
      ],
    });
    const calls = await env.proxy.calls(id);
    expect(calls.map((c) => c.token_source)).toEqual(['backend', 'backend', 'bridge']);
    const first = [...(calls[0].prompt_ids ?? []), ...(calls[0].response_ids ?? [])];
    expect(calls[2].prompt_ids?.slice(0, first.length)).toEqual(first);
  });

  it('a run with tito off never bridges', async () => {
    const { id, client } = await runRollout(false);
    await twoTurns(client, 'one');
    expect(env.fake.produced.at(-1)?.path).toBe('/v1/chat/completions');
    const calls = await env.proxy.calls(id);
    expect(calls.map((c) => [c.token_source, c.bridge])).toEqual([
      ['backend', null],
      ['backend', null],
    ]);
  });
});
