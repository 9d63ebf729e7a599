// What the proxy stores is what the client got: for each wire API, streamed and not, text answers and
// function calls, on a plain rollout and on a run rollout with the token bridge on, the official SDKs
// talk to the REAL proxy in front of the fake vLLM and the stored response is compared to what the SDK
// assembled (Responses: the `response.completed` event itself).
import Anthropic from '@anthropic-ai/sdk';
import type OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { proxyOnFakeVllm } from './proxy-setup';

const env = proxyOnFakeVllm();

/** Fields the SDKs' helpers add to what they parsed (`refusal: null`: the chat stream helper's default). */
const SDK_FIELDS = new Set(['parsed', 'parsed_arguments', 'output_text', 'output_parsed', 'parsed_output']);

/** The client's value as JSON, without the fields the SDKs' helpers add. */
const wire = (o: unknown): unknown =>
  JSON.parse(
    JSON.stringify(o, (k, v) => (SDK_FIELDS.has(k) || (k === 'refusal' && v === null) ? undefined : v)),
  );

const rollouts = {
  'a plain rollout': () => env.proxy.rollout(),
  'a run rollout with the token bridge': () => env.proxy.runRollout('stored', { tito: true }),
};

const turns = {
  text: { input: 'hello there', tools: false },
  'function call': { input: 'use the tool please', tools: true },
};

const responsesTools: OpenAI.Responses.Tool[] = [
  { type: 'function', name: 'lookup', parameters: { type: 'object' }, strict: false },
];
const chatTools: OpenAI.Chat.ChatCompletionTool[] = [
  { type: 'function', function: { name: 'lookup', parameters: { type: 'object' } } },
];
const messagesTools: Anthropic.Tool[] = [{ name: 'lookup', input_schema: { type: 'object' } }];

for (const [where, rollout] of Object.entries(rollouts))
  describe(`the stored response equals what the client got, on ${where}`, () => {
    for (const [kind, turn] of Object.entries(turns)) {
      it(`Responses, ${kind}: create, create({stream}) and stream().finalResponse()`, async () => {
        const { id, client } = await rollout();
        const body = {
          model: 'toy',
          input: turn.input,
          ...(turn.tools ? { tools: responsesTools } : {}),
        };
        const plain = await client.responses.create(body);
        let completed: unknown;
        for await (const e of await client.responses.create({ ...body, stream: true }))
          if (e.type === 'response.completed') completed = e.response;
        const final = await client.responses.stream(body).finalResponse();
        const calls = await env.proxy.calls(id);
        expect(calls.map((c) => [c.wire_api, c.stream, c.status])).toEqual([
          ['responses', false, 'ok'],
          ['responses', true, 'ok'],
          ['responses', true, 'ok'],
        ]);
        expect(calls[0].response).toEqual(wire(plain));
        expect(calls[1].response).toEqual(completed);
        expect(calls[2].response).toEqual(wire(final));
        const last = (calls[2].response as OpenAI.Responses.Response).output.at(-1);
        if (turn.tools)
          expect(last).toMatchObject({
            type: 'function_call',
            status: 'completed',
            arguments: JSON.stringify({ query: turn.input }),
          });
        else
          expect(last).toMatchObject({
            type: 'message',
            status: 'completed',
            content: [{ type: 'output_text', text: `echo: ${turn.input}` }],
          });
      });

      it(`Chat Completions, ${kind}: create and stream().finalChatCompletion()`, async () => {
        const { id, client } = await rollout();
        const body = {
          model: 'toy',
          messages: [{ role: 'user' as const, content: turn.input }],
          ...(turn.tools ? { tools: chatTools } : {}),
        };
        const plain = await client.chat.completions.create(body);
        const final = await client.chat.completions.stream(body).finalChatCompletion();
        const calls = await env.proxy.calls(id);
        expect(calls.map((c) => [c.wire_api, c.stream])).toEqual([
          ['chat', false],
          ['chat', true],
        ]);
        expect(calls[0].response).toEqual(wire(plain));
        expect(calls[1].response).toEqual(wire(final));
      });

      it(`Anthropic Messages, ${kind}: create and stream().finalMessage()`, async () => {
        const r = await rollout();
        const client = new Anthropic({ apiKey: r.key, baseURL: `${env.proxy.url}/r/${r.id}`, maxRetries: 0 });
        const body = {
          model: 'toy',
          max_tokens: 100,
          messages: [{ role: 'user' as const, content: turn.input }],
          ...(turn.tools ? { tools: messagesTools } : {}),
        };
        const plain = await client.messages.create(body);
        const final = await client.messages.stream(body).finalMessage();
        const calls = await env.proxy.calls(r.id);
        expect(calls.map((c) => [c.wire_api, c.stream])).toEqual([
          ['messages', false],
          ['messages', true],
        ]);
        expect(calls[0].response).toEqual(wire(plain));
        expect(calls[1].response).toEqual(wire(final));
      });
    }
  });

describe('a stream that fails is stored as streamed, with what the client got up to the failure', () => {
  it('Responses: the open message keeps the text sent before the backend went away', async () => {
    const { id, client } = await env.proxy.rollout();
    env.fake.set({ dropAfterChunks: 3 });
    try {
      const events: OpenAI.Responses.ResponseStreamEvent[] = [];
      const err = await (async () => {
        for await (const e of await client.responses.create({
          model: 'toy',
          input: 'hello there',
          stream: true,
        }))
          events.push(e);
      })().catch((e) => e);
      expect(err).toBeInstanceOf(Error);
      const text = events.map((e) => (e.type === 'response.output_text.delta' ? e.delta : '')).join('');
      expect(text.length).toBeGreaterThan(0);
      const [call] = await env.proxy.calls(id);
      expect(call).toMatchObject({ stream: true, status: 'error' });
      expect(call.response).toMatchObject({
        status: 'in_progress',
        output: [{ type: 'message', status: 'in_progress', content: [{ type: 'output_text', text }] }],
      });
    } finally {
      env.fake.set({ dropAfterChunks: undefined });
    }
  });
});
