// The bridge behind the translated wire APIs: an Anthropic-SDK and an OpenAI-Responses harness that
// resend their history (tool use included) through the real proxy in a run rollout get their calls
// bridged, so the recorded prompts extend the previous prompt + response token for token.
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import type { LlmCall } from '../../daemon/protocol/entities';
import { parseSse } from '../../daemon/proxy/translate/test-kit';
import { proxyOnFakeVllm } from './proxy-setup';

const env = proxyOnFakeVllm();

const runRollout = () => env.proxy.runRollout('tito-wire', { tito: true });

/** Every call's prompt starts with the previous call's prompt + response (one sample under exact merge). */
function expectOneSequence(calls: LlmCall[]) {
  for (let k = 1; k < calls.length; k++) {
    const prev = [...(calls[k - 1].prompt_ids ?? []), ...(calls[k - 1].response_ids ?? [])];
    expect(calls[k].prompt_ids?.slice(0, prev.length)).toEqual(prev);
  }
}

describe('bridging translated wire APIs', () => {
  it('an Anthropic tool-use conversation is bridged after the first call', async () => {
    const r = await runRollout();
    const client = new Anthropic({ apiKey: r.key, baseURL: `${env.proxy.url}/r/${r.id}`, maxRetries: 0 });
    const tools = [{ name: 'search', input_schema: { type: 'object' as const, properties: {} } }];
    const history: Anthropic.MessageParam[] = [{ role: 'user', content: 'use the tool for cats' }];
    const first = await client.messages.create({ model: 'toy', max_tokens: 200, tools, messages: history });
    const use = first.content.find((b) => b.type === 'tool_use');
    if (use?.type !== 'tool_use') throw new Error('expected a tool_use block');
    history.push({ role: 'assistant', content: first.content as Anthropic.ContentBlockParam[] });
    history.push({
      role: 'user',
      content: [{ type: 'tool_result', tool_use_id: use.id, content: 'cats purr' }],
    });
    const second = await client.messages
      .stream({ model: 'toy', max_tokens: 200, tools, messages: history })
      .finalMessage();
    history.push({ role: 'assistant', content: second.content as Anthropic.ContentBlockParam[] });
    history.push({ role: 'user', content: 'thanks' });
    await client.messages.create({ model: 'toy', max_tokens: 200, tools, messages: history });

    const calls = await env.proxy.calls(r.id);
    expect(calls.map((c) => [c.wire_api, c.token_source])).toEqual([
      ['messages', 'backend'],
      ['messages', 'bridge'],
      ['messages', 'bridge'],
    ]);
    expect(env.fake.produced.at(-1)?.path).toBe('/v1/completions');
    expectOneSequence(calls);
  });

  it('a Responses conversation with function calls is bridged after the first call', async () => {
    const r = await runRollout();
    const client = new OpenAI({ apiKey: r.key, baseURL: `${env.proxy.url}/r/${r.id}/v1`, maxRetries: 0 });
    const tools: OpenAI.Responses.FunctionTool[] = [
      { type: 'function', name: 'lookup', parameters: { type: 'object', properties: {} }, strict: false },
    ];
    const input: OpenAI.Responses.ResponseInput = [{ role: 'user', content: 'call the tool on dogs' }];
    const first = await client.responses.create({ model: 'toy', input, tools });
    const call = first.output.find((o) => o.type === 'function_call');
    if (call?.type !== 'function_call') throw new Error('expected a function_call item');
    input.push(...(first.output as OpenAI.Responses.ResponseInputItem[]));
    input.push({ type: 'function_call_output', call_id: call.call_id, output: 'dogs bark' });
    const second = await client.responses.stream({ model: 'toy', input, tools }).finalResponse();
    expect(second.status).toBe('completed');

    const calls = await env.proxy.calls(r.id);
    expect(calls.map((c) => [c.wire_api, c.token_source])).toEqual([
      ['responses', 'backend'],
      ['responses', 'bridge'],
    ]);
    expectOneSequence(calls);
  });

  it('a Gemini conversation that resends the streamed parts as it got them is bridged after the first call', async () => {
    const r = await runRollout();
    const url = (method: string) => `${env.proxy.url}/r/${r.id}/v1beta/models/toy:${method}`;
    const post = (method: string, body: unknown) =>
      fetch(url(method), {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-goog-api-key': r.key },
        body: JSON.stringify(body),
      });
    const tools = [{ functionDeclarations: [{ name: 'lookup', parametersJsonSchema: { type: 'object' } }] }];
    const contents: unknown[] = [{ role: 'user', parts: [{ text: 'call the tool on owls' }] }];
    const first = parseSse(await (await post('streamGenerateContent?alt=sse', { contents, tools })).text());
    // the history keeps every streamed part, in order (as Gemini CLI does)
    const parts = first.flatMap((e) => e.data.candidates[0].content.parts);
    const fc = parts.find((p) => p.functionCall)?.functionCall;
    expect(fc?.name).toBe('lookup');
    contents.push({ role: 'model', parts });
    contents.push({
      role: 'user',
      parts: [{ functionResponse: { id: fc.id, name: 'lookup', response: { output: 'owls hoot' } } }],
    });
    const second = parseSse(await (await post('streamGenerateContent?alt=sse', { contents, tools })).text());
    contents.push({ role: 'model', parts: second.flatMap((e) => e.data.candidates[0].content.parts) });
    contents.push({ role: 'user', parts: [{ text: 'thanks' }] });
    expect((await post('generateContent', { contents, tools })).status).toBe(200);

    const calls = await env.proxy.calls(r.id);
    expect(calls.map((c) => [c.wire_api, c.token_source])).toEqual([
      ['gemini', 'backend'],
      ['gemini', 'bridge'],
      ['gemini', 'bridge'],
    ]);
    expectOneSequence(calls);
  });
});
