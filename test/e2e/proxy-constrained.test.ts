// A training rollout's call that constrains decoding (logit_bias, min_tokens, structured output, a forced
// tool choice …) is sampled from a distribution the policy's softmax does not describe (vLLM 0.34
// v1/worker/gpu/sample/sampler.py:71,170; v1/worker/gpu/model_runner.py:1734 grammar bitmask; tool_choice
// → structured output: tool_parsers/abstract_tool_parser.py:147). By default (algorithm.sampling.
// constrained: record) the proxy forwards it and names the fields on the call's record, and the samples
// keep its tokens out of the loss; with `refuse` it answers 400 naming the field as the harness wrote it.
// Every wire API, through the official SDKs where the repository has one (Gemini: plain HTTP).
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { buildSamples, trajectoryFromCalls } from '../../daemon/samples';
import { proxyOnFakeVllm } from './proxy-setup';

const env = proxyOnFakeVllm();
const REFUSE = { sampling: { constrained: 'refuse' } };
const tools = [{ type: 'function' as const, function: { name: 'lookup', parameters: { type: 'object' } } }];
const schema = { type: 'object', properties: { a: { type: 'string' } } };

const lastCall = async (id: string) => (await env.proxy.calls(id)).at(-1)!;
const lastRequest = () => env.fake.produced.at(-1)?.request ?? {};
const anthropic = (id: string, key: string) =>
  new Anthropic({ baseURL: `${env.proxy.url}/r/${id}`, apiKey: key, maxRetries: 0 });
const gemini = (id: string, key: string, body: unknown) =>
  fetch(`${env.proxy.url}/r/${id}/v1beta/models/toy:generateContent`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-goog-api-key': key },
    body: JSON.stringify(body),
  });
const geminiJson = {
  contents: [{ role: 'user', parts: [{ text: 'hi' }] }],
  generationConfig: { responseMimeType: 'application/json', maxOutputTokens: 16 },
};

describe('a constrained training call is forwarded and recorded as constrained (the default)', () => {
  it('Chat Completions: logit_bias and a json_schema response_format reach the backend, and the call names both', async () => {
    const { id, client } = await env.proxy.runRollout('c-chat', {});
    await client.chat.completions.create({
      model: 'toy',
      messages: [{ role: 'user', content: 'hi' }],
      logit_bias: { '5': 10 },
      response_format: { type: 'json_schema', json_schema: { name: 'r', schema } },
    });
    expect(lastRequest()).toMatchObject({
      logit_bias: { '5': 10 },
      response_format: { type: 'json_schema' },
    });
    const call = await lastCall(id);
    expect(call.sampling).toMatchObject({ source: 'run', constrained: ['logit_bias', 'response_format'] });
    // …and its samples train on none of its tokens (daemon/samples: mask 0, counted "constrained").
    const built = buildSamples([trajectoryFromCalls({ id, group_id: 'g', reward: 1 }, [call])], {
      merge: 'exact',
      advantage: 'reinforce',
      loss_agg: 'token-mean',
    });
    expect(call.response_ids?.length).toBeGreaterThan(0);
    expect(built.summary).toMatchObject({ mask_tokens: 0, excluded_calls: { constrained: 1 } });
  });

  it('Completions: min_tokens', async () => {
    const { id, client } = await env.proxy.runRollout('c-completions', {});
    await client.completions.create({ model: 'toy', prompt: 'hi', max_tokens: 8, min_tokens: 2 } as never);
    expect(lastRequest()).toMatchObject({ min_tokens: 2 });
    expect((await lastCall(id)).sampling?.constrained).toEqual(['min_tokens']);
  });

  it('Responses: text.format json_schema becomes response_format, recorded as such', async () => {
    const { id, client } = await env.proxy.runRollout('c-responses', {});
    await client.responses.create({
      model: 'toy',
      input: 'hi',
      text: { format: { type: 'json_schema', name: 'r', schema } },
    });
    expect(lastRequest()).toMatchObject({ response_format: { type: 'json_schema' } });
    expect((await lastCall(id)).sampling?.constrained).toEqual(['response_format']);
  });

  it('Anthropic Messages: tool_choice any becomes "required"', async () => {
    const { id, key } = await env.proxy.runRollout('c-messages', {});
    await anthropic(id, key).messages.create({
      model: 'toy',
      max_tokens: 16,
      messages: [{ role: 'user', content: 'hi' }],
      tools: [{ name: 'lookup', input_schema: { type: 'object' } }],
      tool_choice: { type: 'any' },
    });
    expect(lastRequest()).toMatchObject({ tool_choice: 'required' });
    expect((await lastCall(id)).sampling?.constrained).toEqual(['tool_choice']);
  });

  it('Gemini generateContent: responseMimeType application/json', async () => {
    const { id, key } = await env.proxy.runRollout('c-gemini', {});
    expect((await gemini(id, key, geminiJson)).status).toBe(200);
    expect((await lastCall(id)).sampling?.constrained).toEqual(['response_format']);
  });

  it('the bridged /v1/completions token prompt carries min_tokens and the call is still marked', async () => {
    const { id, client } = await env.proxy.runRollout('c-bridged', { tito: true });
    const first = [{ role: 'user' as const, content: 'one' }];
    const r1 = await client.chat.completions.create({ model: 'toy', messages: first });
    await client.chat.completions.create({
      model: 'toy',
      messages: [
        ...first,
        { role: 'assistant', content: r1.choices[0].message.content },
        { role: 'user', content: 'two' },
      ],
      min_tokens: 2,
    } as never);
    expect(env.fake.produced.at(-1)?.path).toBe('/v1/completions');
    expect(lastRequest()).toMatchObject({ min_tokens: 2 });
    const calls = await env.proxy.calls(id);
    expect(calls.map((c) => c.sampling?.constrained ?? null)).toEqual([null, ['min_tokens']]);
    expect(calls[1].token_source).toBe('bridge');
  });

  it('Chat Completions: watermarking and vllm_xargs (custom logits processors) reach the backend, and the call names both', async () => {
    const { id, client } = await env.proxy.runRollout('c-xargs', {});
    await client.chat.completions.create({
      model: 'toy',
      messages: [{ role: 'user', content: 'hi' }],
      watermarking: true,
      vllm_xargs: { my_processor: 1 },
    } as never);
    expect(lastRequest()).toMatchObject({ watermarking: true, vllm_xargs: { my_processor: 1 } });
    expect((await lastCall(id)).sampling?.constrained).toEqual(['watermarking', 'vllm_xargs']);
  });

  it("a Codex-like Responses call (parallel_tool_calls false) is marked on the chat endpoint, where vLLM's tool parser constrains it, and not once bridged", async () => {
    const { id, client } = await env.proxy.runRollout('c-single-call', { tito: true });
    const ask = (input: OpenAI.Responses.ResponseInput) =>
      client.responses.create({
        model: 'toy',
        input,
        tools: [{ type: 'function', name: 'lookup', parameters: { type: 'object' }, strict: false }],
        tool_choice: 'auto',
        parallel_tool_calls: false,
      });
    const first: OpenAI.Responses.ResponseInput = [{ role: 'user', content: 'one' }];
    const r1 = await ask(first);
    expect(lastRequest()).toMatchObject({ parallel_tool_calls: false });
    await ask([...first, ...(r1.output as OpenAI.Responses.ResponseInput), { role: 'user', content: 'two' }]);
    expect(env.fake.produced.at(-1)?.path).toBe('/v1/completions');
    const calls = await env.proxy.calls(id);
    expect(calls.map((c) => [c.token_source, c.sampling?.constrained ?? null])).toEqual([
      ['backend', ['parallel_tool_calls']],
      ['bridge', null],
    ]);
  });

  it('a call that constrains nothing records no constrained field', async () => {
    const { id, client } = await env.proxy.runRollout('c-plain', {});
    await client.chat.completions.create({
      model: 'toy',
      messages: [{ role: 'user', content: 'hi' }],
      tools,
      tool_choice: 'auto',
      response_format: { type: 'text' },
    });
    expect((await lastCall(id)).sampling).not.toHaveProperty('constrained');
  });
});

describe('algorithm.sampling.constrained: refuse', () => {
  it('Chat Completions: tool_choice required is a 400 naming tool_choice, and the backend never sees it', async () => {
    const { id, client } = await env.proxy.runRollout('r-chat', REFUSE);
    const before = env.fake.requests();
    const err = await client.chat.completions
      .create({ model: 'toy', messages: [{ role: 'user', content: 'hi' }], tools, tool_choice: 'required' })
      .catch((e) => e);
    expect(err).toBeInstanceOf(OpenAI.APIError);
    expect(err).toMatchObject({ status: 400, param: 'tool_choice', code: 'constrained_sampling' });
    expect(env.fake.requests()).toBe(before);
    expect(await lastCall(id)).toMatchObject({ status: 'error', http_status: 400 });
  });

  it('Completions: logit_bias', async () => {
    const { client } = await env.proxy.runRollout('r-completions', REFUSE);
    const err = await client.completions
      .create({ model: 'toy', prompt: 'hi', max_tokens: 4, logit_bias: { '3': -100 } })
      .catch((e) => e);
    expect(err).toMatchObject({ status: 400, param: 'logit_bias' });
  });

  it('Responses: names text.format', async () => {
    const { client } = await env.proxy.runRollout('r-responses', REFUSE);
    const err = await client.responses
      .create({ model: 'toy', input: 'hi', text: { format: { type: 'json_object' } } })
      .catch((e) => e);
    expect(err).toMatchObject({ status: 400, param: 'text.format' });
  });

  it('Anthropic Messages: a named tool_choice', async () => {
    const { id, key } = await env.proxy.runRollout('r-messages', REFUSE);
    const err = await anthropic(id, key)
      .messages.create({
        model: 'toy',
        max_tokens: 16,
        messages: [{ role: 'user', content: 'hi' }],
        tools: [{ name: 'lookup', input_schema: { type: 'object' } }],
        tool_choice: { type: 'tool', name: 'lookup' },
      })
      .catch((e) => e);
    expect(err).toBeInstanceOf(Anthropic.APIError);
    expect(err.status).toBe(400);
    expect(err.message).toMatch(/tool_choice constrains decoding/);
  });

  it('Gemini generateContent: names generationConfig.responseMimeType', async () => {
    const { id, key } = await env.proxy.runRollout('r-gemini', REFUSE);
    const res = await gemini(id, key, geminiJson);
    expect(res.status).toBe(400);
    expect(JSON.stringify(await res.json())).toMatch(
      /generationConfig\.responseMimeType constrains decoding/,
    );
  });
});

describe('traffic that is not training', () => {
  it('a standalone rollout forwards constrained fields as they were sent and records none', async () => {
    const { id, client } = await env.proxy.rollout();
    await client.chat.completions.create({
      model: 'toy',
      messages: [{ role: 'user', content: 'hi' }],
      logit_bias: { '5': 10 },
      tools,
      tool_choice: 'required',
    });
    expect(lastRequest()).toMatchObject({ logit_bias: { '5': 10 }, tool_choice: 'required' });
    expect((await lastCall(id)).sampling).toMatchObject({ source: 'request' });
    expect((await lastCall(id)).sampling).not.toHaveProperty('constrained');
  });
});
