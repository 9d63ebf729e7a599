// The official @anthropic-ai/sdk talks to a real fastify server that serves /v1/messages through the
// Messages translator over a scripted vLLM-style chat backend.
import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { countTokens, messagesTranslator } from '../../daemon/proxy/translate/messages';
import {
  type ScriptedServer,
  type ScriptedTurn,
  serveTranslator,
} from '../../daemon/proxy/translate/test-kit';

let s: ScriptedServer;
let client: Anthropic;

beforeAll(async () => {
  s = await serveTranslator(messagesTranslator, '/v1/messages', (app) => {
    app.post('/v1/messages/count_tokens', async (request) =>
      countTokens(request.body, async (chat) => JSON.stringify(chat.messages).length),
    );
  });
  client = new Anthropic({ apiKey: 'test-key', baseURL: s.url, maxRetries: 0 });
});
afterAll(() => s.close());

const tools = [
  {
    name: 'weather',
    description: 'Current weather for a city',
    input_schema: { type: 'object' as const, properties: { city: { type: 'string' } }, required: ['city'] },
  },
];

const toolTurn: ScriptedTurn = {
  reasoning: 'I should look the weather up.',
  content: 'Checking the weather.',
  toolCalls: [{ id: 'call_w1', name: 'weather', arguments: '{"city": "Paris"}' }],
  promptTokens: 40,
  completionTokens: 12,
};
const answerTurn: ScriptedTurn = {
  content: 'It is 18 degrees in Paris.',
  promptTokens: 60,
  completionTokens: 9,
};

describe('Anthropic SDK against the Messages translator', () => {
  it('messages.create returns thinking, text and tool_use blocks and usage', async () => {
    s.script.push(toolTurn);
    const msg = await client.messages.create({
      model: 'qwen3',
      max_tokens: 200,
      tools,
      messages: [{ role: 'user', content: 'Weather in Paris?' }],
    });
    expect(msg.content).toEqual([
      { type: 'thinking', thinking: 'I should look the weather up.', signature: '' },
      { type: 'text', text: 'Checking the weather.' },
      { type: 'tool_use', id: 'call_w1', name: 'weather', input: { city: 'Paris' } },
    ]);
    expect(msg.stop_reason).toBe('tool_use');
    expect(msg.usage).toMatchObject({ input_tokens: 40, output_tokens: 12 });
    expect(s.chatRequests.at(-1)).toMatchObject({
      model: 'qwen3',
      max_tokens: 200,
      tools: [{ type: 'function', function: { name: 'weather' } }],
    });
  });

  it('a streamed tool-use conversation gives the same final messages as non-streaming, and the tool result reaches the backend', async () => {
    s.script.push(toolTurn);
    const history: Anthropic.MessageParam[] = [{ role: 'user', content: 'Weather in Paris?' }];
    const stream = client.messages.stream({ model: 'qwen3', max_tokens: 200, tools, messages: history });
    const seen: string[] = [];
    stream.on('streamEvent', (e) => seen.push(e.type));
    const first = await stream.finalMessage();

    s.script.push(toolTurn);
    const nonStreamed = await client.messages.create({
      model: 'qwen3',
      max_tokens: 200,
      tools,
      messages: history,
    });
    expect(first.content).toEqual(nonStreamed.content);
    expect(first.stop_reason).toBe('tool_use');
    expect(first.usage).toMatchObject({ input_tokens: 40, output_tokens: 12 });
    expect(seen[0]).toBe('message_start');
    expect(seen).toContain('content_block_delta');
    expect(seen.at(-1)).toBe('message_stop');

    history.push({ role: 'assistant', content: first.content as Anthropic.ContentBlockParam[] });
    history.push({
      role: 'user',
      content: [{ type: 'tool_result', tool_use_id: 'call_w1', content: '18C, sunny' }],
    });
    s.script.push(answerTurn);
    const second = await client.messages
      .stream({ model: 'qwen3', max_tokens: 200, tools, messages: history })
      .finalMessage();
    expect(second.content).toEqual([{ type: 'text', text: 'It is 18 degrees in Paris.' }]);
    expect(second.stop_reason).toBe('end_turn');
    expect(s.chatRequests.at(-1)?.messages).toEqual([
      { role: 'user', content: 'Weather in Paris?' },
      {
        role: 'assistant',
        content: 'Checking the weather.',
        reasoning_content: 'I should look the weather up.',
        tool_calls: [
          { id: 'call_w1', type: 'function', function: { name: 'weather', arguments: '{"city":"Paris"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'call_w1', content: '18C, sunny' },
    ]);
  });

  it('create({stream: true}) yields the raw events, text deltas included', async () => {
    s.script.push(answerTurn);
    const events = await client.messages.create({
      model: 'qwen3',
      max_tokens: 50,
      stream: true,
      messages: [{ role: 'user', content: 'hi' }],
    });
    let text = '';
    let stop: string | null = null;
    for await (const e of events) {
      if (e.type === 'content_block_delta' && e.delta.type === 'text_delta') text += e.delta.text;
      if (e.type === 'message_delta') stop = e.delta.stop_reason;
    }
    expect(text).toBe('It is 18 degrees in Paris.');
    expect(stop).toBe('end_turn');
  });

  it('a backend failure mid-stream reaches the SDK as an error event', async () => {
    s.script.push({ ...answerTurn, failMidStream: 'backend went away' });
    const err = await client.messages
      .stream({ model: 'qwen3', max_tokens: 50, messages: [{ role: 'user', content: 'hi' }] })
      .finalMessage()
      .catch((e) => e);
    expect(err).toBeInstanceOf(Error);
    expect(String(err.message)).toMatch(/backend went away/);
  });

  it('an image block is refused with a 400 invalid_request_error the SDK surfaces', async () => {
    const err = await client.messages
      .create({
        model: 'qwen3',
        max_tokens: 10,
        messages: [
          {
            role: 'user',
            content: [{ type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'AAAA' } }],
          },
        ],
      })
      .catch((e) => e);
    expect(err).toBeInstanceOf(Anthropic.BadRequestError);
    expect(err.status).toBe(400);
    expect(err.error).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } });
    expect(err.error.error.message).toMatch(/messages\.0\.content\.0/);
    expect(err.error.error.message).toMatch(/image content is not supported/);
  });

  it('messages.countTokens answers input_tokens from the chat rendering', async () => {
    const r = await client.messages.countTokens({
      model: 'qwen3',
      messages: [{ role: 'user', content: 'hello' }],
    });
    expect(r.input_tokens).toBe(JSON.stringify([{ role: 'user', content: 'hello' }]).length);
  });
});
