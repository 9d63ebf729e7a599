// The language model provider's protocol (lmChat.ts) against a real daemon with a real recording:
// the daemon (SQLite in a temp folder, port 0) proxies to the fake vLLM backend (test/fixtures),
// chats go through the unscoped /v1 with the daemon token, and the recording's calls are read back
// over the REST API.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Daemon, startDaemon } from '../../daemon/daemon';
import type { LlmCall } from '../../daemon/protocol/entities';
import {
  ChatRole,
  ProxyChatError,
  type ProxyConnection,
  type ResponsePart,
  readChatStream,
  streamChat,
  ToolMode,
  toChatRequest,
  toOpenAiMessages,
} from './lmChat';
import { listChatModels, TokenCounter } from './lmModels';

// The fixture lives in the test project, which this project does not reference: load it at run time.
interface FakeVllm {
  url: string;
  produced: { request: Record<string, unknown>; prompt_ids: number[]; choices: { ids: number[] }[] }[];
  set(options: { tokenDelayMs?: number; dropAfterChunks?: number }): void;
  close(): Promise<void>;
}
const fixture = '../../test/fixtures/fake-vllm';

let fake: FakeVllm;
let daemon: Daemon;
let dir: string;
let conn: ProxyConnection;

async function api<T>(method: string, path: string, body?: unknown): Promise<T> {
  const res = await fetch(`${daemon.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${daemon.token}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  expect(res.ok, `${method} ${path} → ${res.status}`).toBe(true);
  return (await res.json()) as T;
}
const recordingCalls = async (id: string) =>
  (await api<{ calls: LlmCall[] }>('GET', `/api/recordings/${id}`)).calls;

async function collect(parts: AsyncIterable<ResponsePart>): Promise<ResponsePart[]> {
  const out: ResponsePart[] = [];
  for await (const p of parts) out.push(p);
  return out;
}
const textOf = (parts: ResponsePart[]) => parts.map((p) => (p.type === 'text' ? p.value : '')).join('');

const user = (...content: unknown[]) => ({ role: ChatRole.User, content, name: undefined });
const assistant = (...content: unknown[]) => ({ role: ChatRole.Assistant, content, name: undefined });
const lookupTool = {
  name: 'lookup',
  description: 'Look something up',
  inputSchema: { type: 'object', properties: { query: { type: 'string' } }, required: ['query'] },
};

beforeAll(async () => {
  const { startFakeVllm } = (await import(/* @vite-ignore */ fixture)) as {
    startFakeVllm(o: { model: string }): Promise<FakeVllm>;
  };
  fake = await startFakeVllm({ model: 'toy' });
  dir = mkdtempSync(join(tmpdir(), 'harness-rl-ext-lm-'));
  daemon = await startDaemon({ dataDir: dir, port: 0, token: 'ext-lm-token', backends: [fake.url] });
  conn = { baseUrl: daemon.url, token: daemon.token };
});

afterAll(async () => {
  await daemon?.close();
  await fake?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('the VS Code chat provider without an active recording', () => {
  it('a chat is refused with a message that says to start a recording, and token counts fall back to the estimate', async () => {
    const err = await collect(streamChat(conn, toChatRequest('toy', [user({ value: 'hi' })]))).catch(
      (e) => e,
    );
    expect(err).toBeInstanceOf(ProxyChatError);
    expect(err.status).toBe(409);
    expect(err.code).toBe('no_active_recording');
    expect(err.message).toContain('Harness RL: Start Recording');
    expect(err.message).toContain('toy');

    const counter = new TokenCounter();
    expect(await counter.count(conn, 'toy', 'twelve chars')).toBe(3); // ceil(12 / 4)
  });
});

describe('the VS Code chat provider with an active recording', () => {
  let recording: { id: string; rollout_id: string };
  beforeAll(async () => {
    recording = await api('POST', '/api/recordings', { name: 'vscode chat' });
  });
  afterAll(async () => {
    await api('POST', `/api/recordings/${recording.id}/stop`, {});
  });

  it('a text chat streams the answer and is recorded token-exact in the recording', async () => {
    const parts = await collect(
      streamChat(
        conn,
        toChatRequest('toy', [user({ value: 'hello from ' }, { value: 'vscode' })], {
          modelOptions: { max_tokens: 200 },
        }),
      ),
    );
    expect(parts.length).toBeGreaterThan(1); // streamed, not one block
    expect(textOf(parts)).toBe('echo: hello from vscode');
    const produced = fake.produced.at(-1);
    expect(produced?.request.max_tokens).toBe(200);

    const calls = await recordingCalls(recording.id);
    expect(calls).toHaveLength(1);
    const [call] = calls;
    expect(call).toMatchObject({
      rollout_id: recording.rollout_id,
      wire_api: 'chat',
      stream: true,
      status: 'ok',
      tags: [],
    });
    expect(call.request).toMatchObject({ messages: [{ role: 'user', content: 'hello from vscode' }] });
    expect(call.prompt_ids).toEqual(produced?.prompt_ids);
    expect(call.response_ids).toEqual(produced?.choices[0].ids);
  });

  it('a tool-calling turn yields one complete tool call, and the follow-up with its result is accepted and recorded', async () => {
    const first = [user({ value: 'use the tool please' })];
    const parts = await collect(
      streamChat(conn, toChatRequest('toy', first, { tools: [lookupTool], toolMode: ToolMode.Auto })),
    );
    const calls = parts.filter((p) => p.type === 'tool_call');
    expect(calls).toEqual([
      {
        type: 'tool_call',
        callId: expect.any(String),
        name: 'lookup',
        input: { query: 'use the tool please' },
      },
    ]);
    const call = calls[0] as Extract<ResponsePart, { type: 'tool_call' }>;
    expect(fake.produced.at(-1)?.request).toMatchObject({
      tool_choice: 'auto',
      tools: [{ type: 'function', function: { name: 'lookup', parameters: lookupTool.inputSchema } }],
    });

    // VS Code's next request: the assistant turn with the tool call part, then a user message with
    // the tool result part and more text.
    const followUp = [
      ...first,
      assistant({ callId: call.callId, name: call.name, input: call.input }),
      user(
        { callId: call.callId, content: [{ value: 'found: ' }, { value: '42' }] },
        { value: 'thanks, summarise' },
      ),
    ];
    const answer = await collect(
      streamChat(conn, toChatRequest('toy', followUp, { tools: [lookupTool], toolMode: ToolMode.Auto })),
    );
    expect(textOf(answer)).toBe('echo: thanks, summarise');
    expect(answer.some((p) => p.type === 'tool_call')).toBe(false);

    const recorded = (await recordingCalls(recording.id)).slice(-2);
    expect(recorded.map((c) => c.status)).toEqual(['ok', 'ok']);
    expect(recorded[0].response).toMatchObject({
      choices: [{ message: { tool_calls: [{ id: call.callId, function: { name: 'lookup' } }] } }],
    });
    expect(recorded[1].request).toMatchObject({
      messages: [
        { role: 'user', content: 'use the tool please' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [
            {
              id: call.callId,
              type: 'function',
              function: { name: 'lookup', arguments: JSON.stringify(call.input) },
            },
          ],
        },
        { role: 'tool', tool_call_id: call.callId, content: 'found: 42' },
        { role: 'user', content: 'thanks, summarise' },
      ],
    });
  });

  it('toolMode Required asks the backend for a tool call', async () => {
    await collect(
      streamChat(
        conn,
        toChatRequest('toy', [user({ value: 'call a tool' })], {
          tools: [lookupTool],
          toolMode: ToolMode.Required,
        }),
      ),
    );
    expect(fake.produced.at(-1)?.request.tool_choice).toBe('required');
  });

  it('aborting mid-stream cancels the chat and the recorded call ends cancelled', async () => {
    fake.set({ tokenDelayMs: 100 });
    try {
      const abort = new AbortController();
      const seen: string[] = [];
      const err = await (async () => {
        for await (const p of streamChat(
          conn,
          toChatRequest('toy', [user({ value: 'a long answer that will not be finished' })]),
          abort.signal,
        )) {
          if (p.type === 'text') seen.push(p.value);
          abort.abort();
        }
      })().catch((e) => e);
      expect(err).toBeInstanceOf(Error);
      expect((err as Error).name).toBe('AbortError');
      expect(seen.length).toBeGreaterThan(0);
      expect(seen.join('').length).toBeLessThan('echo: a long answer that will not be finished'.length);

      let last: LlmCall | undefined;
      for (let i = 0; i < 200; i++) {
        last = (await recordingCalls(recording.id)).at(-1);
        if (last?.status === 'cancelled') break;
        await new Promise((r) => setTimeout(r, 50));
      }
      expect(last?.status).toBe('cancelled');
      expect(last?.request).toMatchObject({
        messages: [{ content: 'a long answer that will not be finished' }],
      });
    } finally {
      fake.set({ tokenDelayMs: 0 });
    }
  });

  it('a backend that drops mid-stream surfaces the proxy error frame as an error', async () => {
    fake.set({ dropAfterChunks: 3 });
    try {
      const err = await collect(streamChat(conn, toChatRequest('toy', [user({ value: 'drop me' })]))).catch(
        (e) => e,
      );
      expect(err).toBeInstanceOf(ProxyChatError);
      expect(err.message).toMatch(/^The model's answer failed: /);
      expect((await recordingCalls(recording.id)).at(-1)?.status).toBe('error');
    } finally {
      fake.set({ dropAfterChunks: undefined });
    }
  });

  it("token counts come from the backend's tokenizer, as cached side calls of the recording", async () => {
    const counter = new TokenCounter();
    const before = (await recordingCalls(recording.id)).length;
    // The fake tokenizer is byte-level: a string counts its UTF-8 bytes (the estimate would say 2).
    expect(await counter.count(conn, 'toy', 'héllo')).toBe(6);
    expect(await counter.count(conn, 'toy', 'héllo')).toBe(6);
    // A message counts as a whole user turn (role framing included), tool parts as their text.
    const msg = user({ value: 'héllo' }, { callId: 'c1', content: [{ value: 'result' }] });
    expect(await counter.count(conn, 'toy', msg)).toBeGreaterThan(6 + 6);
    const side = (await recordingCalls(recording.id)).slice(before);
    expect(side.length).toBe(3); // 'héllo', the empty turn, the message: the repeat was cached
    expect(side.every((c) => c.tags.includes('side') && c.status === 'ok')).toBe(true);
  });
});

describe('the models offered', () => {
  it('are the run models then the models the proxy serves, each able to call tools', async () => {
    const models = await listChatModels(conn, ['trained-7b', 'toy']);
    expect(models.map((m) => m.id)).toEqual(['trained-7b', 'toy']);
    expect(models[0]).toMatchObject({ name: 'trained-7b (Harness RL)', capabilities: { toolCalling: true } });
    expect((await listChatModels(conn, [])).map((m) => m.id)).toEqual(['toy']);
    const down = { baseUrl: 'http://127.0.0.1:1', token: 'x' };
    expect((await listChatModels(down, ['trained-7b'])).map((m) => m.id)).toEqual(['trained-7b']);
  });
});

describe('the request', () => {
  it('keeps system text, decodes text data parts and drops images and markers', () => {
    const bytes = (s: string) => new TextEncoder().encode(s);
    expect(
      toOpenAiMessages([
        { role: ChatRole.System, content: [{ value: 'be brief' }] },
        {
          role: ChatRole.User,
          content: [
            { value: 'see ' },
            { mimeType: 'text/plain', data: bytes('notes') },
            { mimeType: 'image/png', data: bytes('PNG') },
            { mimeType: 'cache_control', data: bytes('ephemeral') },
          ],
        },
        { role: ChatRole.Assistant, content: [] },
        { role: ChatRole.Assistant, content: [{ value: 'ok' }] },
      ]),
    ).toEqual([
      { role: 'system', content: 'be brief' },
      { role: 'user', content: 'see notes' },
      { role: 'assistant', content: 'ok' },
    ]);
  });
});

describe('the SSE reader', () => {
  const sse = (...frames: string[]) =>
    (async function* () {
      for (const f of frames) yield new TextEncoder().encode(f);
    })();
  const frame = (obj: unknown) => `data: ${JSON.stringify(obj)}\n\n`;
  const toolDelta = (index: number, fn: Record<string, string>, id?: string) =>
    frame({
      choices: [{ index: 0, delta: { tool_calls: [{ index, ...(id ? { id } : {}), function: fn }] } }],
    });

  it('joins tool call argument deltas split across frames and bytes, one call per index, in order', async () => {
    const chunks = [
      toolDelta(1, { name: 'b', arguments: '' }, 'call_b'),
      toolDelta(0, { name: 'a', arguments: '{"x":' }, 'call_a'),
      toolDelta(1, { arguments: '{"y":[1,' }),
      toolDelta(0, { arguments: '"é"}' }),
      toolDelta(1, { arguments: '2]}' }),
      'data: [DONE]\n\n',
    ].join('');
    const bytes = new TextEncoder().encode(chunks);
    const split = (async function* () {
      for (let i = 0; i < bytes.length; i += 7) yield bytes.slice(i, i + 7);
    })();
    expect(await collect(readChatStream(split))).toEqual([
      { type: 'tool_call', callId: 'call_a', name: 'a', input: { x: 'é' } },
      { type: 'tool_call', callId: 'call_b', name: 'b', input: { y: [1, 2] } },
    ]);
  });

  it('tool arguments that are not valid JSON give an error naming the tool', async () => {
    const err = await collect(
      readChatStream(sse(toolDelta(0, { name: 'edit', arguments: '{"a": ' }, 'c'), 'data: [DONE]\n\n')),
    ).catch((e) => e);
    expect(err).toBeInstanceOf(ProxyChatError);
    expect(err.message).toMatch(/tool "edit" with arguments that are not valid JSON/);
  });

  it('a stream that ends without [DONE] is an error, not a short answer', async () => {
    const err = await collect(
      readChatStream(sse(frame({ choices: [{ index: 0, delta: { content: 'par' } }] }))),
    ).catch((e) => e);
    expect(err).toBeInstanceOf(ProxyChatError);
    expect(err.message).toMatch(/ended before the answer was complete/);
  });
});
