// Bad input, wrong keys and bad backends: each gets a clear error in the client's wire format, the
// daemon keeps serving, and every failed call of a known rollout is recorded.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { downBackends, postJson, proxyOnFakeVllm, startToyBackend, withTestProxy } from './proxy-setup';

const env = proxyOnFakeVllm({ bodyLimitBytes: 64 * 1024, backendTimeoutMs: 1500 });

const post = (path: string, body: string | object, key: string | null, headers?: Record<string, string>) =>
  postJson(env.proxy.url, path, body, key, headers);

const chatBody = { model: 'toy', messages: [{ role: 'user' as const, content: 'hi' }] };

async function stillServes(client: OpenAI) {
  env.fake.set({ mode: 'ok', delayMs: 0, dropAfterChunks: undefined });
  const res = await client.chat.completions.create(chatBody);
  expect(res.choices[0].message.content).toBe('echo: hi');
}

describe('keys and addressing', () => {
  it('a key for another rollout is refused, in OpenAI and Anthropic format', async () => {
    const a = await env.proxy.rollout();
    const b = await env.proxy.rollout();
    const wrong = new OpenAI({ baseURL: a.baseURL, apiKey: b.key, maxRetries: 0 });
    await expect(wrong.chat.completions.create(chatBody)).rejects.toMatchObject({
      status: 403,
      error: { type: 'permission_error' },
    });
    const anthropic = new Anthropic({ baseURL: `${env.proxy.url}/r/${a.id}`, apiKey: b.key, maxRetries: 0 });
    const err = await anthropic.messages
      .create({ model: 'toy', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] })
      .catch((e) => e);
    expect(err).toBeInstanceOf(Anthropic.APIError);
    expect(err.status).toBe(403);
    expect(err.error).toMatchObject({ type: 'error', error: { type: 'permission_error' } });
    expect(await env.proxy.calls(a.id)).toHaveLength(0);

    const missing = await post(`/r/${a.id}/v1/chat/completions`, chatBody, null);
    expect(missing.status).toBe(401);
    expect(missing.body.error.message).toMatch(/missing API key/);
    // The daemon token is good for any rollout; x-api-key works like a bearer key.
    expect((await post(`/r/${a.id}/v1/chat/completions`, chatBody, env.proxy.token)).status).toBe(200);
    expect(
      (await post(`/r/${a.id}/v1/chat/completions`, chatBody, null, { 'x-api-key': a.key })).status,
    ).toBe(200);
  });

  it('an unknown rollout id is a 404; unscoped calls without a recording are refused clearly', async () => {
    const unknown = await post('/r/rol_nope/v1/chat/completions', chatBody, env.proxy.token);
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.message).toMatch(/unknown rollout/);
    const unscoped = await post('/v1/chat/completions', chatBody, env.proxy.token);
    expect(unscoped.status).toBe(409);
    expect(unscoped.body.error.message).toMatch(/no active recording/);
    const route = await post('/v1/embeddings', { input: 'x' }, env.proxy.token);
    expect(route.status).toBe(404);
    expect(route.body.error.type).toBe('not_found_error');
  });
});

describe('bad requests', () => {
  it('invalid JSON, wrong types, missing fields and oversize bodies are 4xx naming the problem, and recorded', async () => {
    const r = await env.proxy.rollout();
    const path = `/r/${r.id}/v1/chat/completions`;
    const badJson = await post(path, '{"model": "toy", "messages": [', r.key);
    expect(badJson.status).toBe(400);
    expect(badJson.body.error.message).toMatch(/invalid JSON/);

    const noMessages = await post(path, { model: 'toy' }, r.key);
    expect(noMessages.status).toBe(400);
    expect(noMessages.body.error.param).toBe('messages');

    const noModel = await post(path, { messages: [{ role: 'user', content: 'x' }] }, r.key);
    expect(noModel.body.error.param).toBe('model');

    const wrongType = await post(path, { ...chatBody, n: 'two' }, r.key);
    expect(wrongType.status).toBe(400);
    expect(wrongType.body.error.param).toBe('n');

    const badRole = await post(path, { model: 'toy', messages: [{ content: 'x' }] }, r.key);
    expect(badRole.body.error.param).toBe('messages[0].role');

    const badPrompt = await post(`/r/${r.id}/v1/completions`, { model: 'toy', prompt: [1, -2] }, r.key);
    expect(badPrompt.status).toBe(400);
    expect(badPrompt.body.error.param).toBe('prompt');

    const huge = await post(
      path,
      { ...chatBody, messages: [{ role: 'user', content: 'x'.repeat(100_000) }] },
      r.key,
    );
    expect(huge.status).toBe(413);
    expect(huge.body.error.message).toMatch(/too large/);

    const anthropicBad = await post(`/r/${r.id}/v1/messages`, { model: 'toy' }, r.key);
    expect(anthropicBad.status).toBe(400);
    expect(anthropicBad.body.type).toBe('error');

    const stored = await env.proxy.calls(r.id);
    expect(stored.map((c) => c.http_status)).toEqual([400, 400, 400, 400, 400, 400, 413, 400]);
    expect(stored.every((c) => c.status === 'error' && c.error)).toBe(true);
    expect(stored[1].error).toMatch(/messages/);
    await stillServes(r.client);
  });

  it('a backend 4xx reaches the harness as an OpenAI error and is recorded', async () => {
    const r = await env.proxy.rollout();
    env.fake.set({ model: 'toy' });
    // fake-vllm knows only "toy" once its model list is known the proxy maps other names to it; force a 4xx:
    env.fake.set({ mode: 'fail', failStatus: 400 });
    const err = await r.client.chat.completions.create(chatBody).catch((e) => e);
    expect(err).toBeInstanceOf(OpenAI.APIError);
    expect(err.status).toBe(400);
    expect(err.message).toMatch(/fake-vllm failure/);
    const [call] = await env.proxy.calls(r.id);
    expect(call.status).toBe('error');
    expect(call.http_status).toBe(400);
    expect(call.backend).toBe(env.fake.url);
    await stillServes(r.client);
  });
});

describe('bad backends', () => {
  it('a backend that returns garbage gives a 502, streamed or not, and the call is recorded', async () => {
    const r = await env.proxy.rollout();
    env.fake.set({ mode: 'garbage' });
    const err = await r.client.chat.completions.create(chatBody).catch((e) => e);
    expect(err.status).toBe(502);
    const stream = await r.client.chat.completions.create({ ...chatBody, stream: true });
    const midErr = await (async () => {
      for await (const _ of stream) {
      }
    })().catch((e) => e);
    expect(String(midErr)).toMatch(/not JSON/);
    const stored = await env.proxy.calls(r.id);
    expect(stored.map((c) => c.status)).toEqual(['error', 'error']);
    expect(stored[0].http_status).toBe(502);
    expect(stored[1].stream).toBe(true);
    await stillServes(r.client);
  });

  it('a backend that hangs times out with a 504 and a recorded error', async () => {
    const r = await env.proxy.rollout();
    env.fake.set({ mode: 'hang' });
    const err = await r.client.chat.completions.create(chatBody).catch((e) => e);
    expect(err.status).toBe(504);
    const [call] = await env.proxy.calls(r.id);
    expect(call.status).toBe('error');
    expect(call.http_status).toBe(504);
    expect(call.error).toMatch(/timed out/);
    await stillServes(r.client);
  });

  it('a backend that drops the connection mid-stream leaves an error record with the partial tokens', async () => {
    const r = await env.proxy.rollout();
    env.fake.set({ dropAfterChunks: 4 });
    const stream = await r.client.chat.completions.create({
      ...chatBody,
      messages: [{ role: 'user', content: 'long answer please' }],
      stream: true,
    });
    const err = await (async () => {
      for await (const _ of stream) {
      }
    })().catch((e) => e);
    expect(err).toBeDefined();
    const [call] = await env.proxy.calls(r.id);
    expect(call.status).toBe('error');
    expect(call.error).toMatch(/mid-stream/);
    const produced = env.fake.produced.at(-1);
    expect(call.prompt_ids).toEqual(produced?.prompt_ids);
    expect(call.response_ids).toEqual(produced?.choices[0].ids.slice(0, 4));
    await stillServes(r.client);
  });

  it('a client that disconnects mid-stream leaves a cancelled call with the partial ids', async () => {
    const r = await env.proxy.rollout();
    env.fake.set({ tokenDelayMs: 30 });
    const controller = new AbortController();
    const stream = await r.client.chat.completions.create(
      {
        ...chatBody,
        messages: [{ role: 'user', content: 'a fairly long answer to interrupt' }],
        stream: true,
      },
      { signal: controller.signal },
    );
    let seen = 0;
    await (async () => {
      for await (const chunk of stream) {
        if (chunk.choices[0]?.delta?.content) seen++;
        if (seen === 5) controller.abort();
      }
    })().catch(() => {});
    let calls = await env.proxy.calls(r.id);
    for (let i = 0; i < 100 && calls.length === 0; i++) {
      await new Promise((res) => setTimeout(res, 20));
      calls = await env.proxy.calls(r.id);
    }
    const [call] = calls;
    expect(call.error).toMatch(/client closed/);
    expect(call.status).toBe('cancelled');
    expect(call.stream).toBe(true);
    const produced = env.fake.produced.at(-1);
    const ids = call.response_ids ?? [];
    expect(ids.length).toBeGreaterThanOrEqual(5);
    expect(ids.length).toBeLessThan(produced?.choices[0].ids.length ?? 0);
    expect(ids).toEqual(produced?.choices[0].ids.slice(0, ids.length));
    expect(call.response_logprobs).toEqual(produced?.choices[0].logprobs.slice(0, ids.length));
    // The backend request was aborted too.
    for (let i = 0; i < 100 && env.fake.inflight() > 0; i++) await new Promise((res) => setTimeout(res, 20));
    expect(env.fake.inflight()).toBe(0);
    env.fake.set({ tokenDelayMs: 0 });
    await stillServes(r.client);
  });

  it('a client that gives up on a non-streaming call leaves a cancelled call and frees the backend', async () => {
    const r = await env.proxy.rollout();
    env.fake.set({ delayMs: 400 });
    const controller = new AbortController();
    const pending = r.client.chat.completions.create(chatBody, { signal: controller.signal }).catch((e) => e);
    for (let i = 0; i < 200 && env.fake.inflight() === 0; i++) await new Promise((res) => setTimeout(res, 5));
    controller.abort();
    expect(await pending).toBeInstanceOf(Error);
    let calls = await env.proxy.calls(r.id);
    for (let i = 0; i < 100 && calls.length === 0; i++) {
      await new Promise((res) => setTimeout(res, 20));
      calls = await env.proxy.calls(r.id);
    }
    expect(calls.map((c) => [c.status, c.http_status])).toEqual([['cancelled', 499]]);
    expect(calls[0].backend).toBe(env.fake.url);
    expect(env.proxy.proxy.pool.list()[0].outstanding).toBe(0);
    await stillServes(r.client);
  });

  it('a backend that is down is recorded as an error (503/502) and the daemon keeps serving', async () => {
    const [url] = await downBackends(1);
    await withTestProxy({ backends: [url] }, async (lonely) => {
      const r = await lonely.rollout();
      const err = await r.client.chat.completions.create(chatBody).catch((e) => e);
      expect([502, 503]).toContain(err.status);
      const [call] = await lonely.calls(r.id);
      expect(call.status).toBe('error');
      expect(call.error).toMatch(/ECONNREFUSED|backend/);
      const again = await r.client.chat.completions.create(chatBody).catch((e) => e);
      expect([502, 503]).toContain(again.status);
      expect(await lonely.calls(r.id)).toHaveLength(2);
    });
    await withTestProxy({ backends: [] }, async (none) => {
      const r2 = await none.rollout();
      const e2 = await r2.client.chat.completions.create(chatBody).catch((e) => e);
      expect(e2.status).toBe(503);
      expect(e2.message).toMatch(/no inference backend/);
    });
  });
});

/**
 * A backend that serves "toy" and answers every chat call with a 200 whose JSON body stops halfway:
 * `cut` then closes the connection, `stall` sends nothing more; `mute` never answers at all.
 */
const halfAnswering = (how: 'cut' | 'stall' | 'mute') =>
  startToyBackend((_req, res) => {
    if (how === 'mute') return;
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': '1000' });
    res.write('{"id":"chatcmpl-half","object":"chat.completion","choices":[');
    if (how === 'cut') setTimeout(() => res.socket?.destroy(), 20);
  });

describe('a whole answer cut off', () => {
  for (const [how, status, error] of [
    ['cut', 502, /failed: backend closed the connection mid-response$/],
    ['stall', 504, /timed out: backend went silent mid-response \(timeout\)$/],
  ] as const)
    it(`a backend whose non-streamed answer stops halfway (${how}) gives a ${status} and a recorded error`, async () => {
      const backend = await halfAnswering(how);
      await withTestProxy(
        { backends: [backend.url], backendTimeoutMs: 300 },
        async (proxy) => {
          const r = await proxy.rollout();
          const res = await postJson(r.baseURL, '/chat/completions', chatBody, r.key);
          expect(res.status).toBe(status);
          expect(res.body.error.message).toMatch(error);
          const [call] = await proxy.calls(r.id);
          expect([call.status, call.http_status]).toEqual(['error', status]);
          expect(call.error).toMatch(error);
        },
        backend,
      );
    });
});

describe("a recording's upstream that fails", () => {
  for (const [how, status, error] of [
    ['cut', 502, /failed mid-response: .*backend closed the connection mid-response$/],
    ['stall', 502, /failed mid-response: .*backend went silent mid-response \(timeout\)$/],
    ['mute', 504, /^upstream http:\/\/127\.0\.0\.1:\d+ timed out$/],
  ] as const)
    it(`an Anthropic upstream whose non-streamed answer ${how === 'mute' ? 'never comes' : `stops halfway (${how})`} gives a ${status} and a recorded error`, async () => {
      const upstream = await halfAnswering(how);
      await withTestProxy(
        { backendTimeoutMs: 300 },
        async (proxy) => {
          await writeFile(join(proxy.dataDir, 'secrets.json'), JSON.stringify({ anthropic: 'sk-ant-test' }));
          const rec = await proxy.store.createRecording({
            name: 'claude',
            upstream: { kind: 'anthropic', base_url: upstream.url },
          });
          const message = { model: 'claude-x', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] };
          const res = await postJson(proxy.url, '/v1/messages', message, null, { 'x-api-key': rec.key });
          expect(res.status).toBe(status);
          expect(res.body.error.message).toMatch(error);
          const [call] = await proxy.store.listRecordingCalls(rec.id);
          expect([call.status, call.http_status]).toEqual(['error', status]);
          expect(call.error).toMatch(error);
        },
        upstream,
      );
    });
});
