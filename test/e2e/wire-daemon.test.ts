// Anthropic Messages and OpenAI Responses through the REAL proxy (registerProxy on fastify, SQLite store)
// in front of the vLLM-compatible fake backend, with the official SDKs: the harness gets its wire format,
// the store gets the backend's exact token ids.
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { proxyOnFakeVllm } from './proxy-setup';

const env = proxyOnFakeVllm();

async function anthropic() {
  const r = await env.proxy.rollout();
  return {
    ...r,
    anthropic: new Anthropic({ apiKey: r.key, baseURL: `${env.proxy.url}/r/${r.id}`, maxRetries: 0 }),
  };
}

const lastProduced = () => {
  const p = env.fake.produced.at(-1);
  if (!p) throw new Error('nothing produced');
  return { prompt_ids: p.prompt_ids, ...p.choices[0], request: p.request };
};

const searchTool = {
  name: 'search',
  description: 'Search the web',
  input_schema: { type: 'object' as const, properties: { query: { type: 'string' } } },
};

describe('Anthropic Messages through the proxy', () => {
  it('messages.create answers in Messages format and records the backend tokens', async () => {
    const { id, anthropic: client } = await anthropic();
    const msg = await client.messages.create({
      model: 'toy',
      max_tokens: 100,
      system: 'Be brief.',
      messages: [{ role: 'user', content: 'hello there' }],
    });
    expect(msg.type).toBe('message');
    expect(msg.content).toEqual([{ type: 'text', text: 'echo: hello there' }]);
    expect(msg.stop_reason).toBe('end_turn');
    const produced = lastProduced();
    expect(produced.request.messages).toEqual([
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'hello there' },
    ]);
    const [call] = await env.proxy.calls(id);
    expect(call.wire_api).toBe('messages');
    expect(call.prompt_ids).toEqual(produced.prompt_ids);
    expect(call.response_ids).toEqual(produced.ids);
    expect(msg.usage).toMatchObject({
      input_tokens: produced.prompt_ids.length,
      output_tokens: produced.ids.length,
    });
  });

  it('a streamed tool call reaches the SDK as a tool_use block with parsed input', async () => {
    const { id, anthropic: client } = await anthropic();
    const final = await client.messages
      .stream({
        model: 'toy',
        max_tokens: 100,
        tools: [searchTool],
        messages: [{ role: 'user', content: 'use the tool please' }],
      })
      .finalMessage();
    expect(final.stop_reason).toBe('tool_use');
    const block = final.content.find((b) => b.type === 'tool_use');
    expect(block).toMatchObject({
      type: 'tool_use',
      name: 'search',
      input: { query: 'use the tool please' },
    });
    const [call] = await env.proxy.calls(id);
    expect(call.stream).toBe(true);
    expect(call.response_ids).toEqual(lastProduced().ids);
  });
});

describe("Claude Code's requests through the proxy", () => {
  it('a server tool (WebSearch) is left out of the backend request and the call says so', async () => {
    const { id, anthropic: client } = await anthropic();
    const msg = await client.messages.create({
      model: 'toy',
      max_tokens: 100,
      tools: [{ type: 'web_search_20250305', name: 'web_search', max_uses: 8 }, searchTool],
      messages: [{ role: 'user', content: 'hello there' }],
    });
    expect(msg.content).toEqual([{ type: 'text', text: 'echo: hello there' }]);
    expect(lastProduced().request.tools.map((t: { function: { name: string } }) => t.function.name)).toEqual([
      'search',
    ]);
    const [call] = await env.proxy.calls(id);
    expect(call.tags).toEqual([expect.stringMatching(/^tool-left-out:web_search_20250305 \(server tool/)]);
  });

  it('its first request, with the environment as a system message after the task, reaches the backend with one leading system message', async () => {
    const { anthropic: client } = await anthropic();
    await client.messages.create({
      model: 'toy',
      max_tokens: 100,
      system: [{ type: 'text', text: 'You are Claude Code.' }],
      messages: [
        { role: 'user', content: 'hello there' },
        { role: 'system', content: 'Working directory: /tmp/x' } as never,
      ],
    });
    expect(lastProduced().request.messages).toEqual([
      { role: 'system', content: 'You are Claude Code.\n\nWorking directory: /tmp/x' },
      { role: 'user', content: 'hello there' },
    ]);
  });
});

describe('OpenAI Responses through the proxy', () => {
  it('responses.create and responses.stream give the same output and both are recorded token-exactly', async () => {
    const { id, baseURL, key } = await env.proxy.rollout();
    const client = new OpenAI({ baseURL, apiKey: key, maxRetries: 0 });
    const plain = await client.responses.create({
      model: 'toy',
      instructions: 'Be brief.',
      input: 'good morning',
    });
    expect(plain.output_text).toBe('echo: good morning');
    const streamed = await client.responses
      .stream({ model: 'toy', instructions: 'Be brief.', input: 'good morning' })
      .finalResponse();
    expect(streamed.output_text).toBe(plain.output_text);
    expect(streamed.status).toBe('completed');
    const calls = await env.proxy.calls(id);
    expect(calls.map((c) => [c.wire_api, c.stream])).toEqual([
      ['responses', false],
      ['responses', true],
    ]);
    expect(calls[1].response_ids).toEqual(lastProduced().ids);
  });

  it('a function call comes back as a function_call item the SDK accepts', async () => {
    const { baseURL, key } = await env.proxy.rollout();
    const client = new OpenAI({ baseURL, apiKey: key, maxRetries: 0 });
    const r = await client.responses
      .stream({
        model: 'toy',
        input: 'call the tool',
        tools: [{ type: 'function', name: 'lookup', parameters: { type: 'object' }, strict: false }],
      })
      .finalResponse();
    const call = r.output.find((o) => o.type === 'function_call');
    expect(call).toMatchObject({ name: 'lookup', arguments: JSON.stringify({ query: 'call the tool' }) });
  });

  it('an invalid body is a 400 in OpenAI error format naming the field', async () => {
    const { baseURL, key } = await env.proxy.rollout();
    const client = new OpenAI({ baseURL, apiKey: key, maxRetries: 0 });
    const err = await client.responses
      .create({ model: 'toy', input: 'x', previous_response_id: 'resp_123' })
      .catch((e) => e);
    expect(err.status).toBe(400);
    expect(err.message).toMatch(/previous_response_id/);
  });
});
