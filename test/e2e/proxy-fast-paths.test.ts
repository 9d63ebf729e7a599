// The proxy's hand-written fast paths (daemon/proxy/fast-paths.ts) change no record: the same calls, on
// a fresh fake vLLM each time, recorded with the fast paths on and with them off, give equal records.
import { afterEach, describe, expect, it } from 'vitest';
import type { LlmCall } from '../../daemon/protocol/entities';
import { setFastPaths } from '../../daemon/proxy/fast-paths';
import { startFakeVllm } from '../fixtures/fake-vllm';
import { startTestProxy } from './proxy-setup';

afterEach(() => setFastPaths(true));

/** Every way a call's answer is read: native chat and completions whole and streamed, with and without
 * logprob entries for the harness, n = 2, bridged turns (whole and streamed), Anthropic Messages, and a
 * native conversation whose prompt ids continue the last answer's. */
async function calls(fast: boolean): Promise<LlmCall[]> {
  setFastPaths(fast);
  const fake = await startFakeVllm({ model: 'toy' });
  const proxy = await startTestProxy({ backends: [fake.url] });
  try {
    const { id, client, baseURL, key } = await proxy.rollout();
    const user = (content: string) => ({ role: 'user' as const, content });
    const r1 = await client.chat.completions.create({ model: 'toy', messages: [user('one')] });
    await client.chat.completions.create({ model: 'toy', messages: [user('entries')], logprobs: true });
    await client.chat.completions.create({ model: 'toy', messages: [user('two')], n: 2 });
    for await (const _ of await client.chat.completions.create({
      model: 'toy',
      messages: [user('streamed')],
      stream: true,
    }));
    for await (const _ of await client.chat.completions.create({
      model: 'toy',
      messages: [user('streamed entries')],
      stream: true,
      logprobs: true,
      stream_options: { include_usage: true },
    }));
    await client.completions.create({ model: 'toy', prompt: 'plain', max_tokens: 8 });
    for await (const _ of await client.completions.create({
      model: 'toy',
      prompt: 'plain streamed',
      max_tokens: 8,
      stream: true,
    }));
    // The history resent: bridged through the recorded tokens, whole and then streamed.
    const history = [user('one'), { role: 'assistant' as const, content: r1.choices[0].message.content }];
    const r2 = await client.chat.completions.create({ model: 'toy', messages: [...history, user('again')] });
    const longer = [
      ...history,
      user('again'),
      { role: 'assistant' as const, content: r2.choices[0].message.content },
    ];
    for await (const _ of await client.chat.completions.create({
      model: 'toy',
      messages: [...longer, user('streamed again')],
      stream: true,
    }));
    for (const stream of [false, true]) {
      const res = await fetch(`${baseURL.replace(/\/v1$/, '')}/v1/messages`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': key, 'anthropic-version': '2023-06-01' },
        body: JSON.stringify({ model: 'toy', max_tokens: 16, stream, messages: [user('messages')] }),
      });
      await res.text();
    }
    // A native rollout's conversation: each answer's prompt ids continue the last ones (prompt-ids.ts).
    const native = await proxy.rollout({ tito: false });
    const turns = [user('native one')];
    for (let t = 0; t < 3; t++) {
      const r = await native.client.chat.completions.create({ model: 'toy', messages: turns });
      turns.push({ role: 'assistant', content: r.choices[0].message.content } as never, user(`turn ${t}`));
    }
    return [...(await proxy.calls(id)), ...(await proxy.calls(native.id))];
  } finally {
    await proxy.close();
    await fake.close();
  }
}

/** A record without what differs from run to run (ids, times). */
function comparable(c: LlmCall) {
  const { id, rollout_id, attempt_id, created_at, total_ms, ttft_ms, queue_ms, backend, ...rest } =
    c as LlmCall & {
      created_at?: unknown;
    };
  return rest;
}

describe('the fast paths', () => {
  it('record every kind of call exactly as the plain JSON.parse paths do', async () => {
    const on = await calls(true);
    const off = await calls(false);
    expect(on.length).toBe(15);
    expect(on.slice(12).map((c) => c.token_source)).toEqual(['backend', 'backend', 'backend']);
    expect(on.map((c) => c.token_source)).toContain('bridge');
    expect(off.map(comparable)).toEqual(on.map(comparable));
  });
});
