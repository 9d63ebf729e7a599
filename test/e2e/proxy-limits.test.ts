// What each wire API accepts, as strictly as the README says, and the proxy's limits: a body over the
// limit is read to its end before the 413, count_tokens follows one recording rule, a stream has a
// total deadline, and a generation request is never sent to a backend twice.
import { createServer, type Server } from 'node:http';
import { type AddressInfo, connect } from 'node:net';
import { describe, expect, it } from 'vitest';
import { writeSecret } from '../../daemon/config/secrets';
import { startTestDaemon } from '../helpers/daemon';
import { proxyOnFakeVllm, startTestProxy } from './proxy-setup';

const env = proxyOnFakeVllm({ bodyLimitBytes: 1024 * 1024 });
const chat = { model: 'toy', messages: [{ role: 'user', content: 'hi' }], max_tokens: 4 };

async function post(url: string, body: unknown, key: string, headers: Record<string, string> = {}) {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}`, ...headers },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as any };
}

async function listen(handler: Parameters<typeof createServer>[1]): Promise<{ url: string; server: Server }> {
  const server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

const models = JSON.stringify({
  object: 'list',
  data: [{ id: 'toy', object: 'model', max_model_len: 4096 }],
});

describe('each wire API refuses what the official one refuses, naming the field', () => {
  it('Responses store/include/truncation, Messages and Gemini empty turns, Gemini safetySettings, Chat tool_choice', async () => {
    const r = await env.proxy.rollout();
    const base = `${env.proxy.url}/r/${r.id}`;
    const responses = { model: 'toy', input: 'hi', max_output_tokens: 4 };
    const gemini = { contents: [{ role: 'user', parts: [{ text: 'hi' }] }] };
    const tool = { type: 'function', function: { name: 'f', parameters: { type: 'object' } } };
    const cases: [string, unknown, string][] = [
      ['/v1/responses', { ...responses, store: 'yes' }, 'store'],
      ['/v1/responses', { ...responses, include: 'reasoning' }, 'include'],
      ['/v1/responses', { ...responses, truncation: 5 }, 'truncation'],
      ['/v1/messages', { model: 'toy', max_tokens: 4, messages: [] }, 'messages'],
      ['/v1beta/models/toy:generateContent', { contents: [] }, 'contents'],
      ['/v1beta/models/toy:generateContent', { ...gemini, safetySettings: 'none' }, 'safetySettings'],
      [
        '/v1beta/models/toy:generateContent',
        { ...gemini, safetySettings: [{ category: 1 }] },
        'safetySettings',
      ],
      [
        '/v1/chat/completions',
        { ...chat, tools: [tool], tool_choice: { type: 'function', function: { name: 'g' } } },
        'tool_choice.function.name',
      ],
    ];
    for (const [path, body, field] of cases) {
      const res = await post(`${base}${path}`, body, r.key, { 'x-goog-api-key': r.key });
      expect(res.status, `${path} ${field}`).toBe(400);
      expect(JSON.stringify(res.body), `${path} ${field}`).toContain(field);
    }
    // The well-typed forms pass.
    for (const [path, body] of [
      [
        '/v1/responses',
        { ...responses, store: false, include: ['reasoning.encrypted_content'], truncation: 'auto' },
      ],
      [
        '/v1beta/models/toy:generateContent',
        { ...gemini, safetySettings: [{ category: 'HARM_CATEGORY_HARASSMENT', threshold: 'BLOCK_NONE' }] },
      ],
      [
        '/v1/chat/completions',
        { ...chat, tools: [tool], tool_choice: { type: 'function', function: { name: 'f' } } },
      ],
    ] as [string, unknown][])
      expect((await post(`${base}${path}`, body, r.key, { 'x-goog-api-key': r.key })).status, path).toBe(200);
  });

  it('a JSON answer to a streamed request is a recorded 502 saying so', async () => {
    const backend = await listen((req, res) => {
      req.resume();
      req.on('end', () => {
        res.writeHead(200, { 'content-type': 'application/json' });
        if (req.url?.startsWith('/v1/models')) return res.end(models);
        res.end(
          JSON.stringify({
            id: 'x',
            object: 'chat.completion',
            choices: [{ index: 0, message: { role: 'assistant', content: 'hi' }, finish_reason: 'stop' }],
          }),
        );
      });
    });
    const proxy = await startTestProxy({ backends: [backend.url] });
    try {
      const r = await proxy.rollout();
      const res = await post(`${r.baseURL}/chat/completions`, { ...chat, stream: true }, r.key);
      expect(res.status).toBe(502);
      expect(res.body.error).toMatchObject({
        code: 'backend_not_streamed',
        message: expect.stringMatching(/instead of an event stream/),
      });
      const [call] = await proxy.calls(r.id);
      expect(call).toMatchObject({ status: 'error', http_status: 502, stream: true });
    } finally {
      await proxy.close();
      backend.server.close();
    }
  });
  it("a recording's Anthropic or OpenAI upstream that answers JSON to a streamed request is a recorded 502 too", async () => {
    const upstream = await listen((req, res) => {
      req.resume();
      req.on('end', () => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ id: 'x', type: 'message', content: [{ type: 'text', text: 'hi' }] }));
      });
    });
    const daemon = await startTestDaemon();
    try {
      for (const [kind, path] of [
        ['anthropic', '/v1/messages'],
        ['openai', '/v1/responses'],
      ] as const) {
        writeSecret(daemon.dataDir, kind, `sk-${kind}-test`);
        const rec = (
          await daemon.api<{ id: string; key: string }>('POST', '/api/recordings', {
            upstream: { kind, base_url: upstream.url },
          })
        ).body;
        const body =
          kind === 'anthropic'
            ? { model: 'm', max_tokens: 4, messages: chat.messages, stream: true }
            : { model: 'm', input: 'hi', stream: true };
        const res = await post(`${daemon.url}${path}`, body, rec.key, { 'x-api-key': rec.key });
        expect(res.status, kind).toBe(502);
        expect(JSON.stringify(res.body), kind).toContain('instead of an event stream');
        const calls = await daemon.ctx.store.listRecordingCalls(rec.id);
        expect(calls, kind).toMatchObject([{ status: 'error', http_status: 502, stream: true }]);
        expect(calls[0]?.error, kind).toMatch(/instead of an event stream/);
        await daemon.api('POST', `/api/recordings/${rec.id}/stop`, {});
      }
    } finally {
      await daemon.close();
      upstream.server.close();
    }
  });
});

describe('limits', () => {
  it('a body over the limit is read to its end and answered 413, on the proxy and the REST API', async () => {
    const size = 24 * 1024 * 1024;
    // Like Python's requests: the whole body first, then the answer. A server that answers and
    // closes before reading it all leaves the client a broken pipe (EPIPE) instead of the 413.
    const whole = (base: string, path: string, key: string) =>
      new Promise<{ text: string; written: string }>((resolve) => {
        const u = new URL(base);
        let text = '';
        let written = 'pending';
        const answered = () => /\r\n\r\n\{.*\}$/s.test(text);
        const socket = connect(Number(u.port), u.hostname, () => {
          socket.write(
            `POST ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: ${size}\r\n\r\n`,
          );
          socket.write(Buffer.alloc(size, 'a'), (err) => {
            written = err ? String((err as NodeJS.ErrnoException).code ?? err) : 'all';
            if (answered()) socket.destroy();
          });
        });
        socket.on('data', (d) => {
          text += d;
          if (written !== 'pending' && answered()) socket.destroy();
        });
        socket.on('error', (err) => {
          written = String((err as NodeJS.ErrnoException).code ?? err);
          socket.destroy();
        });
        socket.on('close', () => resolve({ text, written }));
      });
    const r = await env.proxy.rollout();
    const proxied = await whole(env.proxy.url, `/r/${r.id}/v1/chat/completions`, r.key);
    expect([proxied.written, proxied.text.slice(0, 12)]).toEqual(['all', 'HTTP/1.1 413']);
    const daemon = await startTestDaemon({ bodyLimitBytes: 1024 * 1024 });
    try {
      const rest = await whole(daemon.url, '/api/rollouts', daemon.token);
      expect([rest.written, rest.text.slice(0, 12)]).toEqual(['all', 'HTTP/1.1 413']);
      expect(rest.text).toContain('"field":"body"');
    } finally {
      await daemon.close();
    }
  });

  it('count_tokens of a rollout is never recorded, whether it parses, validates or succeeds', async () => {
    const r = await env.proxy.rollout();
    const url = `${env.proxy.url}/r/${r.id}/v1/messages/count_tokens`;
    const headers = { 'content-type': 'application/json', 'x-api-key': r.key };
    for (const body of [
      '{',
      JSON.stringify({ model: 'toy' }),
      JSON.stringify({ model: 'toy', messages: [{ role: 'user', content: 'hi' }] }),
    ])
      expect((await fetch(url, { method: 'POST', headers, body })).status).toBeLessThan(500);
    expect(await env.proxy.calls(r.id)).toEqual([]);
  });

  it('a stream kept alive by comments ends at the call deadline, recorded as an error', async () => {
    const backend = await listen((req, res) => {
      req.resume();
      if (req.url?.startsWith('/v1/models')) {
        res.writeHead(200, { 'content-type': 'application/json' });
        return res.end(models);
      }
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const beat = setInterval(() => res.write(': keep-alive\n\n'), 50);
      res.on('close', () => clearInterval(beat));
    });
    const daemon = await startTestDaemon({
      backends: [backend.url],
      backendTimeoutMs: 400,
      config: { call_deadline_ms: 1000 },
    });
    try {
      const r = (await daemon.api('POST', '/api/rollouts', {})).body;
      const t0 = Date.now();
      const res = await fetch(`${daemon.url}/r/${r.id}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${r.key}` },
        body: JSON.stringify({ ...chat, stream: true }),
      });
      const text = await res.text();
      expect(Date.now() - t0).toBeLessThan(5000);
      expect(text).toMatch(/deadline of 1000 ms/);
      const detail = (await daemon.api('GET', `/api/rollouts/${r.id}`)).body;
      expect(detail.llm_calls[0]).toMatchObject({
        status: 'error',
        error: expect.stringMatching(/deadline/),
      });
      // A recording that passes through to Anthropic: the upstream's keep-alive pings likewise.
      writeSecret(daemon.dataDir, 'anthropic', 'sk-ant-test');
      const rec = (
        await daemon.api('POST', '/api/recordings', {
          upstream: { kind: 'anthropic', base_url: backend.url },
        })
      ).body;
      const t1 = Date.now();
      const passed = await fetch(`${daemon.url}/v1/messages`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': rec.key },
        body: JSON.stringify({
          model: 'toy',
          max_tokens: 4,
          stream: true,
          messages: [{ role: 'user', content: 'hi' }],
        }),
      });
      await passed.text();
      expect(Date.now() - t1).toBeLessThan(5000);
      const calls = (await daemon.api('GET', `/api/recordings/${rec.id}`)).body.calls;
      expect(calls[0]).toMatchObject({
        status: 'error',
        error: expect.stringMatching(/deadline of 1000 ms/),
      });
    } finally {
      await daemon.close();
      backend.server.closeAllConnections();
      backend.server.close();
    }
  });

  it('a backend that closes before its headers gets a generation request once, and the harness a recorded 502', async () => {
    let chats = 0;
    const backend = await listen((req, res) => {
      req.resume();
      req.on('end', () => {
        if (req.url?.startsWith('/v1/models')) {
          res.writeHead(200, { 'content-type': 'application/json' });
          return res.end(models);
        }
        // The first call is answered (its socket stays open); the second, on that reused socket, is
        // read and then the socket is closed without an answer: it may have run.
        if (++chats > 1) return req.socket.destroy();
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            id: 'x',
            object: 'chat.completion',
            model: 'toy',
            choices: [{ index: 0, message: { role: 'assistant', content: 'hi' }, finish_reason: 'stop' }],
          }),
        );
      });
    });
    const proxy = await startTestProxy({ backends: [backend.url] });
    try {
      const r = await proxy.rollout();
      expect((await post(`${r.baseURL}/chat/completions`, chat, r.key)).status).toBe(200);
      const res = await post(`${r.baseURL}/chat/completions`, chat, r.key);
      expect(res.status).toBe(502);
      expect(chats).toBe(2);
      expect(res.body.error.message).toMatch(/not retried/);
      expect((await proxy.calls(r.id))[1]).toMatchObject({ status: 'error', http_status: 502 });
    } finally {
      await proxy.close();
      backend.server.close();
    }
  });
});
