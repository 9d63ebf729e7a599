// Recording sessions (unscoped /v1 → the active recording) and the translated wire APIs (Anthropic
// Messages, OpenAI Responses) through the same token-exact chat pipeline.
import { writeFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeVllm, startFakeVllm } from '../fixtures/fake-vllm';
import { startTestProxy, type TestProxy } from './proxy-setup';

let fake: FakeVllm;
let proxy: TestProxy;

beforeAll(async () => {
  fake = await startFakeVllm({ model: 'toy' });
  proxy = await startTestProxy({ backends: [fake.url] });
  await writeFile(
    join(proxy.dataDir, 'secrets.json'),
    JSON.stringify({ openai: 'sk-user-openai-secret-0001', anthropic: 'sk-ant-user-secret-0002' }),
  );
});
afterAll(async () => {
  await proxy?.close();
  await fake?.close();
});

/** A minimal Anthropic Messages upstream: answers "hi from upstream", streamed or not; keeps the headers it saw. */
async function startFakeAnthropic(): Promise<{
  url: string;
  seen: IncomingMessage['headers'][];
  server: Server;
}> {
  const seen: IncomingMessage['headers'][] = [];
  const server = createServer((req, res) => {
    let raw = '';
    req.on('data', (c) => (raw += c));
    req.on('end', () => {
      seen.push(req.headers);
      const body = JSON.parse(raw || '{}');
      if (req.url === '/v1/messages/count_tokens') {
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ input_tokens: 42 }));
        return;
      }
      const message = {
        id: 'msg_up',
        type: 'message',
        role: 'assistant',
        model: body.model,
        content: [{ type: 'text', text: 'hi from upstream' }],
        stop_reason: 'end_turn',
        stop_sequence: null,
        usage: { input_tokens: 7, output_tokens: 4 },
      };
      if (!body.stream) {
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(message));
        return;
      }
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const ev = (type: string, data: object) =>
        res.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
      ev('message_start', {
        message: { ...message, content: [], stop_reason: null, usage: { input_tokens: 7, output_tokens: 0 } },
      });
      ev('content_block_start', { index: 0, content_block: { type: 'text', text: '' } });
      ev('content_block_delta', { index: 0, delta: { type: 'text_delta', text: 'hi from ' } });
      ev('content_block_delta', { index: 0, delta: { type: 'text_delta', text: 'upstream' } });
      ev('content_block_stop', { index: 0 });
      ev('message_delta', {
        delta: { stop_reason: 'end_turn', stop_sequence: null },
        usage: { output_tokens: 4 },
      });
      ev('message_stop', {});
      res.end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen, server };
}

describe('recording sessions', () => {
  it('unscoped calls record into the active recording, with secrets redacted and side calls tagged', async () => {
    const rec = await proxy.store.createRecording({ name: 'mine', upstream: { kind: 'reference' } });
    const client = new OpenAI({ baseURL: `${proxy.url}/v1`, apiKey: rec.key, maxRetries: 0 });
    const res = await client.chat.completions.create({
      model: 'toy',
      messages: [{ role: 'user', content: 'my key is sk-live-abcdefghijklmnop, keep it' }],
    });
    expect(res.choices[0].message.content).toContain('echo:');
    await client.chat.completions.create({
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: 'small one' }],
    });
    await client.chat.completions.create({
      model: 'toy',
      messages: [
        { role: 'system', content: 'Write a short title for this conversation.' },
        { role: 'user', content: 'x' },
      ],
    });
    const calls = await proxy.store.listRecordingCalls(rec.id);
    expect(calls).toHaveLength(3);
    expect(calls.every((c) => c.recording_id === rec.id && c.rollout_id === rec.rollout_id)).toBe(true);
    expect(JSON.stringify(calls[0].request)).not.toContain('sk-live-abcdefghijklmnop');
    expect(JSON.stringify(calls[0].request)).toContain('[redacted]');
    expect(JSON.stringify(calls[0].backend_request)).not.toContain('sk-live-abcdefghijklmnop');
    expect(calls.map((c) => c.tags)).toEqual([[], ['side'], ['side']]);
    expect(calls[0].response_ids).toEqual(fake.produced.at(-3)?.choices[0].ids);

    // A wrong key is refused; after the recording stops, unscoped calls are refused clearly.
    const wrong = new OpenAI({ baseURL: `${proxy.url}/v1`, apiKey: 'hrk_wrong', maxRetries: 0 });
    await expect(
      wrong.chat.completions.create({ model: 'toy', messages: [{ role: 'user', content: 'x' }] }),
    ).rejects.toMatchObject({
      status: 401,
    });
    await proxy.store.stopRecording(rec.id);
    await new Promise((r) => setTimeout(r, 50));
    const err = await client.chat.completions
      .create({ model: 'toy', messages: [{ role: 'user', content: 'x' }] })
      .catch((e) => e);
    expect(err.status).toBe(409);
    expect(err.message).toMatch(/no active recording/);
  });

  it('an OpenAI upstream gets the user key from secrets.json; the call is recorded as text without the key', async () => {
    const upstream = await startFakeVllm({ model: 'gpt-x' });
    try {
      const rec = await proxy.store.createRecording({
        name: 'openai',
        upstream: { kind: 'openai', base_url: upstream.url },
      });
      const client = new OpenAI({ baseURL: `${proxy.url}/v1`, apiKey: rec.key, maxRetries: 0 });
      const res = await client.chat.completions.create({
        model: 'gpt-x',
        messages: [{ role: 'user', content: 'hello upstream' }],
      });
      expect(res.choices[0].message.content).toBe('echo: hello upstream');
      const sent = upstream.produced.at(-1)?.request;
      expect(sent?.return_token_ids).toBeUndefined();
      const [call] = await proxy.store.listRecordingCalls(rec.id);
      expect(call.token_source).toBe('text');
      expect(call.response_ids).toBeNull();
      // provider pass-through keeps text only: the token bridge is not even asked
      expect(call.bridge).toBeNull();
      expect(call.backend).toBe(upstream.url);
      expect(JSON.stringify(call)).not.toContain('sk-user-openai-secret-0001');
      await proxy.store.stopRecording(rec.id);
    } finally {
      await upstream.close();
    }
  });

  it('a vLLM upstream is called with token ids turned on and the record is token-exact', async () => {
    const upstream = await startFakeVllm({ model: 'own-model' });
    try {
      const rec = await proxy.store.createRecording({
        name: 'vllm',
        upstream: { kind: 'vllm', base_url: upstream.url },
      });
      const client = new OpenAI({ baseURL: `${proxy.url}/v1`, apiKey: rec.key, maxRetries: 0 });
      const stream = await client.chat.completions.create({
        model: 'own-model',
        messages: [{ role: 'user', content: 'own backend' }],
        stream: true,
      });
      let text = '';
      for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
      expect(text).toBe('echo: own backend');
      const produced = upstream.produced.at(-1);
      expect(produced?.request.return_token_ids).toBe(true);
      const [call] = await proxy.store.listRecordingCalls(rec.id);
      expect(call.token_source).toBe('backend');
      expect(call.prompt_ids).toEqual(produced?.prompt_ids);
      expect(call.response_ids).toEqual(produced?.choices[0].ids);
      expect(call.response_logprobs).toEqual(produced?.choices[0].logprobs);
      await proxy.store.stopRecording(rec.id);
    } finally {
      await upstream.close();
    }
  });

  it('an Anthropic upstream gets /v1/messages natively, streamed and not, and count_tokens is a side call', async () => {
    const up = await startFakeAnthropic();
    try {
      const rec = await proxy.store.createRecording({
        name: 'claude',
        upstream: { kind: 'anthropic', base_url: up.url },
      });
      const client = new Anthropic({ baseURL: proxy.url, apiKey: rec.key, maxRetries: 0 });
      const msg = await client.messages.create({
        model: 'claude-sonnet-4-5',
        max_tokens: 100,
        messages: [{ role: 'user', content: 'hi' }],
      });
      expect(msg.content[0]).toMatchObject({ type: 'text', text: 'hi from upstream' });
      const stream = client.messages.stream({
        model: 'claude-sonnet-4-5',
        max_tokens: 100,
        messages: [{ role: 'user', content: 'hi' }],
      });
      const final = await stream.finalMessage();
      expect(final.content[0]).toMatchObject({ type: 'text', text: 'hi from upstream' });
      const count = await client.messages.countTokens({
        model: 'claude-haiku-4-5',
        messages: [{ role: 'user', content: 'hi' }],
      });
      expect(count.input_tokens).toBe(42);
      expect(up.seen.every((h) => h['x-api-key'] === 'sk-ant-user-secret-0002')).toBe(true);

      const calls = await proxy.store.listRecordingCalls(rec.id);
      expect(calls.map((c) => c.wire_api)).toEqual(['messages', 'messages', 'messages']);
      expect(calls.map((c) => c.tags)).toEqual([[], [], ['side']]);
      expect(calls[1].stream).toBe(true);
      expect((calls[1].response as { content: unknown }).content).toEqual([
        { type: 'text', text: 'hi from upstream' },
      ]);
      expect(calls[1].finish_reason).toBe('end_turn');
      expect(calls[1].usage).toEqual({ prompt_tokens: 7, completion_tokens: 4 });
      expect(JSON.stringify(calls)).not.toContain('sk-ant-user-secret-0002');
      await proxy.store.stopRecording(rec.id);
    } finally {
      up.server.closeAllConnections();
      up.server.close();
    }
  });

  it('an OpenAI upstream gets /v1/responses natively when streamed; the record holds response.completed', async () => {
    const response = {
      id: 'resp_up',
      object: 'response',
      status: 'completed',
      model: 'gpt-x',
      output: [{ type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'hi up' }] }],
      usage: { input_tokens: 5, output_tokens: 2 },
    };
    const up = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        const created = { ...response, status: 'in_progress', output: [], usage: null };
        res.write(
          `event: response.created\ndata: ${JSON.stringify({ type: 'response.created', response: created })}\n\n`,
        );
        res.write(
          `event: response.output_text.delta\ndata: ${JSON.stringify({ type: 'response.output_text.delta', delta: 'hi up' })}\n\n`,
        );
        res.end(
          `event: response.completed\ndata: ${JSON.stringify({ type: 'response.completed', response })}\n\n`,
        );
      });
    });
    await new Promise<void>((resolve) => up.listen(0, '127.0.0.1', resolve));
    try {
      const rec = await proxy.store.createRecording({
        name: 'codex',
        upstream: { kind: 'openai', base_url: `http://127.0.0.1:${(up.address() as AddressInfo).port}/v1` },
      });
      const client = new OpenAI({ baseURL: `${proxy.url}/v1`, apiKey: rec.key, maxRetries: 0 });
      const stream = await client.responses.create({ model: 'gpt-x', input: 'hi', stream: true });
      const types: string[] = [];
      for await (const e of stream) types.push(e.type);
      expect(types).toEqual(['response.created', 'response.output_text.delta', 'response.completed']);
      const [call] = await proxy.store.listRecordingCalls(rec.id);
      expect(call).toMatchObject({
        wire_api: 'responses',
        stream: true,
        status: 'ok',
        finish_reason: 'completed',
      });
      expect(call.response).toEqual(response);
      expect(call.usage).toEqual({ prompt_tokens: 5, completion_tokens: 2 });
      await proxy.store.stopRecording(rec.id);
    } finally {
      up.closeAllConnections();
      up.close();
    }
  });
});

describe('translated wire APIs', () => {
  it('Anthropic Messages on a rollout go through the chat backend token-exact, streamed and not', async () => {
    const r = await proxy.rollout();
    const client = new Anthropic({ baseURL: `${proxy.url}/r/${r.id}`, apiKey: r.key, maxRetries: 0 });
    const msg = await client.messages.create({
      model: 'toy',
      max_tokens: 100,
      messages: [{ role: 'user', content: 'anthropic hi' }],
    });
    expect(msg.content[0]).toMatchObject({ type: 'text', text: 'echo: anthropic hi' });
    const p1 = fake.produced.at(-1);
    const final = await client.messages
      .stream({ model: 'toy', max_tokens: 100, messages: [{ role: 'user', content: 'anthropic stream' }] })
      .finalMessage();
    expect(final.content[0]).toMatchObject({ type: 'text', text: 'echo: anthropic stream' });
    const p2 = fake.produced.at(-1);
    const calls = await proxy.calls(r.id);
    expect(calls.map((c) => [c.wire_api, c.stream, c.status])).toEqual([
      ['messages', false, 'ok'],
      ['messages', true, 'ok'],
    ]);
    expect(calls[0].prompt_ids).toEqual(p1?.prompt_ids);
    expect(calls[0].response_ids).toEqual(p1?.choices[0].ids);
    expect(calls[1].response_ids).toEqual(p2?.choices[0].ids);
    expect(calls[1].response_logprobs).toEqual(p2?.choices[0].logprobs);
    expect((calls[1].response as { type: string }).type).toBe('message');
    const count = await client.messages.countTokens({
      model: 'toy',
      messages: [{ role: 'user', content: 'count me' }],
    });
    expect(count.input_tokens).toBeGreaterThan(5);
  });

  it('OpenAI Responses on a rollout go through the chat backend token-exact', async () => {
    const r = await proxy.rollout();
    const res = await r.client.responses.create({ model: 'toy', input: 'responses hi' });
    expect(res.output_text).toBe('echo: responses hi');
    const p = fake.produced.at(-1);
    const stream = await r.client.responses.create({ model: 'toy', input: 'responses stream', stream: true });
    let text = '';
    for await (const ev of stream) if (ev.type === 'response.output_text.delta') text += ev.delta;
    expect(text).toBe('echo: responses stream');
    const calls = await proxy.calls(r.id);
    expect(calls.map((c) => c.wire_api)).toEqual(['responses', 'responses']);
    expect(calls[0].response_ids).toEqual(p?.choices[0].ids);
    expect(calls[1].response_ids).toEqual(fake.produced.at(-1)?.choices[0].ids);
  });
});
