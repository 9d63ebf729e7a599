// Training traffic samples from the distribution its logprobs describe: on every wire API the proxy sends
// a run's rollouts to the backend with the run's sampling (T 1, no top-k/p/min-p, neutral penalties
// unless algorithm.sampling says otherwise), never with the harness's own values or vLLM's
// generation_config.json defaults (vLLM 0.34 config/model.py:1884 get_diff_sampling_param), and records
// what the backend got on the llm call.
import { describe, expect, it } from 'vitest';
import type { CallSampling } from '../../daemon/protocol/entities';
import { proxyOnFakeVllm } from './proxy-setup';

const env = proxyOnFakeVllm();

/** What Qwen3's generation_config.json would have vLLM apply; a harness may send the same. */
const QWEN3 = { temperature: 0.6, top_k: 20, top_p: 0.95 };
const NEUTRAL = {
  temperature: 1,
  top_p: 1,
  top_k: 0,
  min_p: 0,
  repetition_penalty: 1,
  presence_penalty: 0,
  frequency_penalty: 0,
};

async function post(url: string, key: string, body: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}`, ...headers },
    body: JSON.stringify(body),
  });
  return { status: res.status, json: (await res.json()) as { error?: { param?: string; message?: string } } };
}

/** The sampling fields of the request the fake vLLM last got. */
function lastBackendSampling(): Record<string, unknown> {
  const r = env.fake.produced.at(-1)?.request ?? {};
  return Object.fromEntries(Object.keys(NEUTRAL).map((k) => [k, r[k]]));
}

async function lastCall(id: string) {
  const calls = await env.proxy.calls(id);
  return calls.at(-1)!;
}

describe('sampling of training rollouts, per wire API', () => {
  it('Chat Completions: the harness asks for T 0.6, top-k 20, top-p 0.95; the backend gets T 1 untruncated, and the call records both', async () => {
    const { id, client } = await env.proxy.runRollout('chat', {});
    await client.chat.completions.create({
      model: 'toy',
      messages: [{ role: 'user', content: 'hi' }],
      max_tokens: 32,
      seed: 5,
      ...QWEN3,
    } as never);
    expect(lastBackendSampling()).toEqual(NEUTRAL);
    expect(env.fake.produced.at(-1)?.request).toMatchObject({ seed: 5, max_tokens: 32 });
    const call = await lastCall(id);
    expect(call.sampling).toEqual({
      ...NEUTRAL,
      seed: 5,
      max_tokens: 32,
      source: 'run',
      overridden: QWEN3,
    } satisfies CallSampling);
  });

  it('Chat Completions, streamed, with no sampling fields at all: the neutral values are filled in', async () => {
    const { id, client } = await env.proxy.runRollout('chat-stream', {});
    const stream = await client.chat.completions.create({
      model: 'toy',
      messages: [{ role: 'user', content: 'hi' }],
      stream: true,
    });
    for await (const _ of stream);
    expect(lastBackendSampling()).toEqual(NEUTRAL);
    expect((await lastCall(id)).sampling).toMatchObject({ ...NEUTRAL, source: 'run', overridden: null });
  });

  it('Completions', async () => {
    const { id, baseURL, key } = await env.proxy.runRollout('completions', {});
    const r = await post(`${baseURL}/completions`, key, {
      model: 'toy',
      prompt: 'hi',
      max_tokens: 8,
      ...QWEN3,
    });
    expect(r.status).toBe(200);
    expect(env.fake.produced.at(-1)?.path).toBe('/v1/completions');
    expect(lastBackendSampling()).toEqual(NEUTRAL);
    expect((await lastCall(id)).sampling).toMatchObject({ ...NEUTRAL, max_tokens: 8, overridden: QWEN3 });
  });

  it('Responses', async () => {
    const { id, baseURL, key } = await env.proxy.runRollout('responses', {});
    const r = await post(`${baseURL}/responses`, key, {
      model: 'toy',
      input: 'hi',
      temperature: 0.6,
      top_p: 0.95,
    });
    expect(r.status).toBe(200);
    expect(lastBackendSampling()).toEqual(NEUTRAL);
    expect((await lastCall(id)).sampling).toMatchObject({
      ...NEUTRAL,
      overridden: { temperature: 0.6, top_p: 0.95 },
    });
  });

  it('Anthropic Messages', async () => {
    const { id, baseURL, key } = await env.proxy.runRollout('messages', {});
    const r = await post(
      `${baseURL}/messages`,
      key,
      { model: 'toy', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }], ...QWEN3 },
      { 'anthropic-version': '2023-06-01' },
    );
    expect(r.status).toBe(200);
    expect(lastBackendSampling()).toEqual(NEUTRAL);
    expect((await lastCall(id)).sampling).toMatchObject({ ...NEUTRAL, max_tokens: 16, overridden: QWEN3 });
  });

  it('Gemini generateContent', async () => {
    const { id, key } = await env.proxy.runRollout('gemini', {});
    const r = await post(
      `${env.proxy.url}/r/${id}/v1beta/models/toy:generateContent`,
      key,
      {
        contents: [{ role: 'user', parts: [{ text: 'hi' }] }],
        generationConfig: { temperature: 0.6, topK: 20, topP: 0.95, maxOutputTokens: 16 },
      },
      { 'x-goog-api-key': key },
    );
    expect(r.status).toBe(200);
    expect(lastBackendSampling()).toEqual(NEUTRAL);
    expect((await lastCall(id)).sampling).toMatchObject({ ...NEUTRAL, max_tokens: 16, overridden: QWEN3 });
  });

  it('the bridged /v1/completions token prompt carries the same values', async () => {
    const { id, client } = await env.proxy.runRollout('bridged', { tito: true });
    const first = [{ role: 'user' as const, content: 'one' }];
    const r1 = await client.chat.completions.create({ model: 'toy', messages: first, ...QWEN3 } as never);
    await client.chat.completions.create({
      model: 'toy',
      messages: [
        ...first,
        { role: 'assistant', content: r1.choices[0].message.content },
        { role: 'user', content: 'two' },
      ],
      ...QWEN3,
    } as never);
    expect(env.fake.produced.at(-1)?.path).toBe('/v1/completions');
    expect(lastBackendSampling()).toEqual(NEUTRAL);
    const call = await lastCall(id);
    expect(call.token_source).toBe('bridge');
    expect(call.sampling).toMatchObject({ ...NEUTRAL, source: 'run', overridden: QWEN3 });
    // the bridge's own limit (max_model_len − prompt) is what the backend got, and is recorded
    expect(call.sampling?.max_tokens).toBe((call.backend_request as { max_tokens: number }).max_tokens);
  });
});

describe('what a run sets, and traffic that is not training', () => {
  it("a run's algorithm.sampling is what its rollouts sample with", async () => {
    const { id, client } = await env.proxy.runRollout('custom', {
      sampling: { temperature: 0.8, top_p: 0.9 },
    });
    await client.chat.completions.create({ model: 'toy', messages: [{ role: 'user', content: 'hi' }] });
    expect(lastBackendSampling()).toEqual({ ...NEUTRAL, temperature: 0.8, top_p: 0.9 });
    expect((await lastCall(id)).sampling).toMatchObject({ temperature: 0.8, top_p: 0.9, source: 'run' });
  });

  it('a standalone rollout samples as its harness asked, and records what it sent (null: not sent)', async () => {
    const { id, client } = await env.proxy.rollout();
    await client.chat.completions.create({
      model: 'toy',
      messages: [{ role: 'user', content: 'hi' }],
      temperature: 0.6,
    });
    const sent = env.fake.produced.at(-1)?.request ?? {};
    expect(sent.temperature).toBe(0.6);
    expect(sent).not.toHaveProperty('top_k');
    expect((await lastCall(id)).sampling).toMatchObject({
      temperature: 0.6,
      top_k: null,
      top_p: null,
      source: 'request',
      overridden: null,
    });
  });

  it('include_reasoning: false on a training rollout is refused with a 400 naming the field', async () => {
    const { id, baseURL, key } = await env.proxy.runRollout('hidden', {});
    const before = env.fake.requests();
    const r = await post(`${baseURL}/chat/completions`, key, {
      model: 'toy',
      messages: [{ role: 'user', content: 'hi' }],
      include_reasoning: false,
    });
    expect(r.status).toBe(400);
    expect(r.json.error).toMatchObject({ param: 'include_reasoning' });
    expect(r.json.error?.message).toMatch(/token ids and logprobs/);
    expect(env.fake.requests()).toBe(before);
    expect(await lastCall(id)).toMatchObject({ status: 'error', http_status: 400 });
  });
});
