// Found by probing: bodies nested 10,000 levels deep (from the harness or from a backend) are refused
// and still recorded; each wire API checks parameter types as strictly as the official API, naming
// the parameter; a 502 says which backend failed and how.
import { describe, expect, it } from 'vitest';
import { downBackends, postJson, proxyOnFakeVllm, startToyBackend, withTestProxy } from './proxy-setup';

const env = proxyOnFakeVllm({ bodyLimitBytes: 256 * 1024 });

const post = (path: string, body: string | object, key: string) => postJson(env.proxy.url, path, body, key);

const deep = (n: number) => `${'['.repeat(n)}${']'.repeat(n)}`;
const chat = { model: 'toy', messages: [{ role: 'user', content: 'hi' }] };

describe('deeply nested bodies', () => {
  it('a 10,000-level body is a 400 and the failed call is recorded with its raw text, truncated', async () => {
    const r = await env.proxy.rollout();
    const bare = await post(`/r/${r.id}/v1/chat/completions`, deep(10_000), r.key);
    expect(bare.status).toBe(400);
    expect(bare.body.error.message).toMatch(/deeper than 128 levels/);
    // Hidden under an unknown key of an otherwise valid request, on the Anthropic route too.
    const hidden = `{"model":"toy","messages":[{"role":"user","content":"hi"}],"extra":${deep(10_000)}}`;
    const inChat = await post(`/r/${r.id}/v1/chat/completions`, hidden, r.key);
    expect(inChat.status).toBe(400);
    const inMessages = await post(`/r/${r.id}/v1/messages`, hidden, r.key);
    expect(inMessages.status).toBe(400);
    expect(inMessages.body.type).toBe('error');

    const calls = await env.proxy.calls(r.id);
    expect(calls.map((c) => [c.wire_api, c.status, c.http_status])).toEqual([
      ['chat', 'error', 400],
      ['chat', 'error', 400],
      ['messages', 'error', 400],
    ]);
    for (const c of calls) {
      expect(c.error).toMatch(/deeper than 128 levels/);
      expect(typeof c.request).toBe('string');
      expect((c.request as string).length).toBeLessThan(10_100);
    }
    expect(calls[0].request).toMatch(/^\[\[\[/);
    expect(calls[0].request).toMatch(/10000 more characters\)$/);
    expect(calls[1].request).toMatch(/^\{"model":"toy"/);
    // A JSON null body is refused (and recorded) like the REST API refuses it.
    const nullBody = await post(`/r/${r.id}/v1/chat/completions`, 'null', r.key);
    expect(nullBody.status).toBe(400);
    expect(nullBody.body.error).toMatchObject({
      code: 'null_body',
      message: expect.stringMatching(/not null/),
    });
    expect((await env.proxy.calls(r.id)).at(-1)).toMatchObject({
      status: 'error',
      http_status: 400,
      request: 'null',
    });
    // The daemon keeps serving.
    expect((await post(`/r/${r.id}/v1/chat/completions`, chat, r.key)).status).toBe(200);
  });

  it('a backend answer nested 10,000 levels deep is a recorded 502, streamed or not', async () => {
    const evil = await startToyBackend((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(`{"id":"x","object":"chat.completion","choices":${deep(10_000)}}`);
    });
    await withTestProxy(
      { backends: [evil.url] },
      async (proxy) => {
        const r = await proxy.rollout();
        const res = await postJson(r.baseURL, '/chat/completions', chat, r.key);
        expect(res.status).toBe(502);
        const [call] = await proxy.calls(r.id);
        expect(call.status).toBe('error');
        expect(call.http_status).toBe(502);
        expect(typeof call.response).toBe('string');
      },
      evil,
    );
  });
});

describe('each wire API checks parameter types like the official API', () => {
  it('Chat Completions: a 400 in OpenAI shape naming the parameter; unknown extra keys pass', async () => {
    const r = await env.proxy.rollout();
    const path = `/r/${r.id}/v1/chat/completions`;
    const cases: [object, string][] = [
      [{ ...chat, temperature: 'hot' }, 'temperature'],
      [{ ...chat, temperature: 3 }, 'temperature'],
      [{ ...chat, top_p: 1.5 }, 'top_p'],
      [{ ...chat, tools: [{ type: 'function' }] }, 'tools[0].function'],
      [{ ...chat, tools: [{ type: 'function', function: { description: 'x' } }] }, 'tools[0].function.name'],
      [{ ...chat, tool_choice: 'sometimes' }, 'tool_choice'],
      [{ ...chat, messages: [{ role: 'user', content: { text: 'hi' } }] }, 'messages[0].content'],
      [{ ...chat, messages: [{ role: 'wizard', content: 'hi' }] }, 'messages[0].role'],
      [{ ...chat, messages: [{ role: 'tool', content: 'x' }] }, 'messages[0].tool_call_id'],
      [
        {
          ...chat,
          messages: [{ role: 'assistant', content: null, tool_calls: [{ id: 'c', type: 'function' }] }],
        },
        'messages[0].tool_calls[0].function',
      ],
      [{ ...chat, response_format: { type: 'yaml' } }, 'response_format.type'],
      [{ ...chat, logit_bias: { '1': 'max' } }, 'logit_bias.1'],
      [{ ...chat, seed: 1.5 }, 'seed'],
    ];
    for (const [body, param] of cases) {
      const res = await post(path, body, r.key);
      expect(res.status, param).toBe(400);
      expect(res.body.error, param).toMatchObject({
        type: 'invalid_request_error',
        param,
        code: 'invalid_request',
      });
      expect(res.body.error.message).toContain(param);
    }
    // Unknown keys (vLLM's sampling extras) still reach the backend; valid parts and tools pass.
    const ok = await post(
      path,
      {
        ...chat,
        top_k: 5,
        messages: [
          { role: 'system', content: [{ type: 'text', text: 'be brief' }] },
          { role: 'user', content: [{ type: 'text', text: 'hi' }] },
        ],
        tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object' } } }],
        temperature: 0.5,
      },
      r.key,
    );
    expect(ok.status).toBe(200);
    const stored = await env.proxy.calls(r.id);
    expect(stored.at(-1)?.backend_request).toMatchObject({ top_k: 5 });
    expect(stored.filter((c) => c.http_status === 400)).toHaveLength(cases.length);
  });

  it('Completions, Responses and Anthropic Messages name a wrongly typed parameter too', async () => {
    const r = await env.proxy.rollout();
    const completions = await post(
      `/r/${r.id}/v1/completions`,
      { model: 'toy', prompt: 'x', temperature: 'hot' },
      r.key,
    );
    expect(completions.status).toBe(400);
    expect(completions.body.error.param).toBe('temperature');
    const echo = await post(`/r/${r.id}/v1/completions`, { model: 'toy', prompt: 'x', echo: 'yes' }, r.key);
    expect(echo.body.error.param).toBe('echo');

    const responses = await post(
      `/r/${r.id}/v1/responses`,
      { model: 'toy', input: 'hi', temperature: 5 },
      r.key,
    );
    expect(responses.status).toBe(400);
    expect(responses.body.error).toMatchObject({ type: 'invalid_request_error', param: 'temperature' });

    const messages = await post(
      `/r/${r.id}/v1/messages`,
      { model: 'toy', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }], temperature: 1.5 },
      r.key,
    );
    expect(messages.status).toBe(400);
    expect(messages.body).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } });
    expect(messages.body.error.message).toContain('temperature');
  });
});

describe('backend failures', () => {
  it('a 502 names each backend that could not be reached and how', async () => {
    const urls = await downBackends(2);
    await withTestProxy({ backends: urls }, async (proxy) => {
      const r = await proxy.rollout();
      const { status, body } = await postJson(r.baseURL, '/chat/completions', chat, r.key);
      // The first call fails over through both; later ones may see them already marked unhealthy (503).
      expect(status).toBe(502);
      expect(body.error.code).toBe('backend_unreachable');
      expect(body.error.message).toMatch(/^none of the 2 inference backends could be reached: /);
      for (const url of urls) expect(body.error.message).toContain(`${url} (ECONNREFUSED`);
      expect(body.error.message).not.toMatch(/backend the inference backends/);
      const [call] = await proxy.calls(r.id);
      expect(call.error).toBe(body.error.message);
    });
  });
});
