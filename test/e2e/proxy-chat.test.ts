// The proxy end to end with the official openai SDK: chat and completions, streaming and not, tool
// calls, n>1, token prompts and the model list; every stored call carries exactly the token ids and
// logprobs the backend produced.
import type OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import type { LlmCall } from '../../daemon/protocol/entities';
import type { SqlStore } from '../../daemon/store/sql-store';
import { encode } from '../fixtures/fake-vllm';
import { proxyOnFakeVllm } from './proxy-setup';

const env = proxyOnFakeVllm();

const newRollout = () => env.proxy.rollout();
const calls = (rolloutId: string): Promise<LlmCall[]> => env.proxy.calls(rolloutId);

/** The last generation fake-vllm produced, choice `i`. */
function lastProduced(i = 0) {
  const p = env.fake.produced.at(-1);
  if (!p) throw new Error('nothing produced');
  return { prompt_ids: p.prompt_ids, ...p.choices[i], request: p.request };
}

describe('chat completions', () => {
  it('a non-streaming chat call returns the answer and stores exactly the backend tokens', async () => {
    const { id, client } = await newRollout();
    const res = await client.chat.completions.create({
      model: 'toy',
      messages: [{ role: 'user', content: 'hello there' }],
    });
    expect(res.choices[0].message.content).toBe('echo: hello there');
    // The harness did not ask for token ids or logprobs: it does not get them.
    expect((res as unknown as Record<string, unknown>).prompt_token_ids).toBeUndefined();
    expect((res.choices[0] as unknown as Record<string, unknown>).token_ids).toBeUndefined();
    expect(res.choices[0].logprobs).toBeNull();

    const produced = lastProduced();
    expect(produced.request.return_token_ids).toBe(true);
    expect(produced.request.logprobs).toBe(true);
    const [call] = await calls(id);
    expect(call.status).toBe('ok');
    expect(call.wire_api).toBe('chat');
    expect(call.stream).toBe(false);
    expect(call.prompt_ids).toEqual(produced.prompt_ids);
    expect(call.response_ids).toEqual(produced.ids);
    expect(call.response_logprobs).toEqual(produced.logprobs);
    expect(call.token_source).toBe('backend');
    expect(call.finish_reason).toBe('stop');
    expect(call.usage).toEqual({
      prompt_tokens: produced.prompt_ids.length,
      completion_tokens: produced.ids.length,
    });
    expect(call.backend).toBe(env.fake.url);
    expect(call.attempt_id).not.toBeNull();
    expect(call.request).toEqual({ model: 'toy', messages: [{ role: 'user', content: 'hello there' }] });
    expect((call.backend_request as Record<string, unknown>).return_token_ids).toBe(true);
    expect(call.response).toEqual(res);
    expect(call.total_ms).toBeGreaterThanOrEqual(0);
  });

  it('a harness that asks for token ids and logprobs itself gets them', async () => {
    const { client } = await newRollout();
    const res = (await client.chat.completions.create({
      model: 'toy',
      messages: [{ role: 'user', content: 'ids please' }],
      logprobs: true,
      // @ts-expect-error vLLM extra
      return_token_ids: true,
    })) as unknown as Record<string, any>;
    const produced = lastProduced();
    expect(res.prompt_token_ids).toEqual(produced.prompt_ids);
    expect(res.choices[0].token_ids).toEqual(produced.ids);
    expect(res.choices[0].logprobs.content.map((c: { logprob: number }) => c.logprob)).toEqual(
      produced.logprobs,
    );
  });

  it('a streamed chat call streams through and stores the assembled response with every token', async () => {
    const { id, client } = await newRollout();
    const stream = await client.chat.completions.create({
      model: 'toy',
      messages: [{ role: 'user', content: 'stream me, ünïcode' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = '';
    let usage: unknown = null;
    let chunks = 0;
    for await (const chunk of stream) {
      chunks++;
      text += chunk.choices[0]?.delta?.content ?? '';
      if (chunk.usage) usage = chunk.usage;
      expect((chunk as unknown as Record<string, unknown>).prompt_token_ids).toBeUndefined();
      expect((chunk.choices[0] as unknown as Record<string, unknown> | undefined)?.token_ids).toBeUndefined();
    }
    expect(chunks).toBeGreaterThan(5);
    expect(text).toBe('echo: stream me, ünïcode');
    expect(usage).not.toBeNull();
    const produced = lastProduced();
    const [call] = await calls(id);
    expect(call.stream).toBe(true);
    expect(call.status).toBe('ok');
    expect(call.prompt_ids).toEqual(produced.prompt_ids);
    expect(call.response_ids).toEqual(produced.ids);
    expect(call.response_logprobs).toEqual(produced.logprobs);
    expect(call.finish_reason).toBe('stop');
    const response = call.response as Record<string, any>;
    expect(response.object).toBe('chat.completion');
    expect(response.choices[0].message.content).toBe(text);
    expect(response.choices[0].token_ids).toBeUndefined();
    expect(call.ttft_ms).not.toBeNull();
  });

  it('tool calls pass through, streamed and not', async () => {
    const { id, client } = await newRollout();
    const tools: OpenAI.Chat.ChatCompletionTool[] = [
      {
        type: 'function',
        function: {
          name: 'search',
          parameters: { type: 'object', properties: { query: { type: 'string' } } },
        },
      },
    ];
    const res = await client.chat.completions.create({
      model: 'toy',
      messages: [{ role: 'user', content: 'use a tool to find cats' }],
      tools,
    });
    const tc = res.choices[0].message.tool_calls?.[0];
    expect(res.choices[0].finish_reason).toBe('tool_calls');
    expect(tc?.type === 'function' && tc.function.name).toBe('search');

    const stream = await client.chat.completions.create({
      model: 'toy',
      messages: [{ role: 'user', content: 'use a tool to find dogs' }],
      tools,
      stream: true,
    });
    let name = '';
    let args = '';
    for await (const chunk of stream) {
      for (const t of chunk.choices[0]?.delta?.tool_calls ?? []) {
        name += t.function?.name ?? '';
        args += t.function?.arguments ?? '';
      }
    }
    expect(name).toBe('search');
    expect(JSON.parse(args)).toEqual({ query: 'use a tool to find dogs' });
    const stored = await calls(id);
    expect(stored).toHaveLength(2);
    const produced = lastProduced();
    expect(stored[1].response_ids).toEqual(produced.ids);
    expect(stored[1].finish_reason).toBe('tool_calls');
    const msg = (stored[1].response as Record<string, any>).choices[0].message;
    expect(msg.tool_calls[0].function.name).toBe('search');
    expect(JSON.parse(msg.tool_calls[0].function.arguments)).toEqual({ query: 'use a tool to find dogs' });
  });

  it('n>1 returns every choice and stores one token-exact record per choice, tagged choice:<i>', async () => {
    const { id, client } = await newRollout();
    const res = await client.chat.completions.create({
      model: 'toy',
      messages: [{ role: 'user', content: 'twice' }],
      n: 3,
      max_tokens: 100,
      stop: ['zzz'],
    });
    expect(res.choices.map((c) => c.message.content)).toEqual([
      'echo: twice',
      '(1) echo: twice',
      '(2) echo: twice',
    ]);
    const produced = lastProduced(0);
    expect(produced.request.n).toBe(3);
    expect(produced.request.max_tokens).toBe(100);
    expect(produced.request.stop).toEqual(['zzz']);
    const whole = await calls(id);
    expect(whole.map((c) => c.tags)).toEqual([['choice:0'], ['choice:1'], ['choice:2']]);
    for (let i = 0; i < 3; i++) {
      const p = lastProduced(i);
      expect(whole[i].prompt_ids).toEqual(produced.prompt_ids);
      expect(whole[i].response_ids).toEqual(p.ids);
      expect(whole[i].response_logprobs).toEqual(p.logprobs);
      expect(whole[i].usage?.completion_tokens).toBe(p.ids.length);
      expect((whole[i].response as Record<string, any>).choices).toHaveLength(3);
    }
    expect(whole[1].response_ids).not.toEqual(whole[0].response_ids);

    const stream = await client.chat.completions.create({
      model: 'toy',
      messages: [{ role: 'user', content: 'twice' }],
      n: 2,
      stream: true,
    });
    const texts = ['', ''];
    for await (const chunk of stream) for (const c of chunk.choices) texts[c.index] += c.delta?.content ?? '';
    expect(texts).toEqual(['echo: twice', '(1) echo: twice']);
    const streamed = (await calls(id)).slice(3);
    expect(streamed.map((c) => c.tags)).toEqual([['choice:0'], ['choice:1']]);
    for (let i = 0; i < 2; i++) {
      expect(streamed[i].response_ids).toEqual(lastProduced(i).ids);
      expect(streamed[i].response_logprobs).toEqual(lastProduced(i).logprobs);
    }
  });

  it('stores the request as the harness sent it, byte for byte, and the answer as the harness got it', async () => {
    const { id, key, baseURL } = await newRollout();
    // Spacing and key order no serialiser would produce: only the received text has them.
    const sent = '{ "messages" : [ {"content":"as  sent", "role":"user"} ],\n  "model":"toy" }';
    const res = await fetch(`${baseURL}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: sent,
    });
    const answer = await res.text();
    expect(res.status).toBe(200);
    const [call] = await calls(id);
    const [row] = await (env.proxy.store as SqlStore).driver.all<{ request: string; response: string }>(
      'SELECT request, response FROM llm_calls WHERE id = ?',
      [call.id],
    );
    expect(row.request).toBe(sent);
    expect(row.response).toBe(answer);
    expect(call.request).toEqual(JSON.parse(sent));
    expect(call.response).toEqual(JSON.parse(answer));
    // What the backend got, with the proxy's extras, is stored as the JSON it was sent.
    expect(call.backend_request).toEqual(lastProduced().request);
  });

  it('max_tokens cuts the answer with finish_reason length', async () => {
    const { id, client } = await newRollout();
    const res = await client.chat.completions.create({
      model: 'toy',
      messages: [{ role: 'user', content: 'a long message' }],
      max_completion_tokens: 4,
    });
    expect(res.choices[0].finish_reason).toBe('length');
    expect(res.choices[0].message.content).toBe('echo');
    const [call] = await calls(id);
    expect(call.response_ids).toEqual(encode('echo'));
    expect(call.finish_reason).toBe('length');
  });
});

describe('completions', () => {
  it('a text prompt and a token-id prompt, streamed and not, are stored token-exact', async () => {
    const { id, client } = await newRollout();
    const a = await client.completions.create({ model: 'toy', prompt: 'Once upon a time' });
    expect(a.choices[0].text).toBe('echo: Once upon a time');
    expect(a.choices[0].logprobs).toBeNull();
    const pa = lastProduced();
    expect(pa.request.logprobs).toBe(1);

    const tokens = encode('token prompt');
    const b = await client.completions.create({ model: 'toy', prompt: tokens, stream: true });
    let text = '';
    for await (const chunk of b) text += chunk.choices[0]?.text ?? '';
    expect(text).toBe('echo: token prompt');
    const pb = lastProduced();

    const c = await client.completions.create({ model: 'toy', prompt: 'with logprobs', logprobs: 2 });
    expect(c.choices[0].logprobs?.token_logprobs).toEqual(lastProduced().logprobs);

    const stored = await calls(id);
    expect(stored.map((s) => s.wire_api)).toEqual(['completions', 'completions', 'completions']);
    expect(stored[0].prompt_ids).toEqual(encode('Once upon a time'));
    expect(stored[0].response_ids).toEqual(pa.ids);
    expect(stored[0].response_logprobs).toEqual(pa.logprobs);
    expect(stored[1].prompt_ids).toEqual(tokens);
    expect(stored[1].response_ids).toEqual(pb.ids);
    expect(stored[1].response_logprobs).toEqual(pb.logprobs);
    expect((stored[1].response as Record<string, any>).choices[0].text).toBe(text);
    expect(stored[2].response_logprobs).toEqual(lastProduced().logprobs);
  });
});

describe('models', () => {
  it('lists the served model names, scoped and unscoped', async () => {
    const { client } = await newRollout();
    const list = await client.models.list();
    expect(list.data.map((m) => m.id)).toEqual(['toy']);
    const res = await fetch(`${env.proxy.url}/v1/models`, {
      headers: { authorization: `Bearer ${env.proxy.token}` },
    });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { data: { id: string }[] }).data.map((m) => m.id)).toEqual(['toy']);
  });
});
