// The token-in-token-out bridge over HTTP, the way the proxy uses it: the backend's /tokenize and
// /detokenize (backendTokenizer), a token prompt to /v1/completions, completionToChat back. Backend 1 is
// a vLLM stand-in with the REAL Qwen3 tokenizer and template whose "model" samples scripted text with a
// non-canonical token split; backend 2 is the proxy's fake vLLM.
import Fastify, { type FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  backendTokenizer,
  type ChatMessageLike,
  completionToChat,
  planBridge,
} from '../../daemon/proxy/tito';
import { localQwen3Tokenizer } from '../../daemon/tokenize/qwen3';
import { type FakeVllm, startFakeVllm } from '../fixtures/fake-vllm';

const qwen = localQwen3Tokenizer();
const enc = (s: string) => qwen.encode(s) as number[];

let app: FastifyInstance;
let url = '';
const calls: Record<string, number> = { tokenize: 0, detokenize: 0, completions: 0 };
/** What the stand-in model samples next, as token ids (so a test can choose a non-canonical split). */
const samples: number[][] = [];
const prompts: number[][] = [];

beforeAll(async () => {
  app = Fastify();
  app.post('/tokenize', async (req) => {
    calls.tokenize++;
    const b = req.body as Record<string, any>;
    const tokens = Array.isArray(b.messages)
      ? await qwen.render(b.messages, b.tools, b.add_generation_prompt ?? true, b.chat_template_kwargs)
      : enc(String(b.prompt));
    return { count: tokens.length, max_model_len: 32768, tokens };
  });
  app.post('/detokenize', async (req) => {
    calls.detokenize++;
    return { prompt: await qwen.decode((req.body as { tokens: number[] }).tokens) };
  });
  app.post('/v1/completions', async (req) => {
    calls.completions++;
    const b = req.body as { prompt: number[]; model: string };
    prompts.push(b.prompt);
    const ids = samples.shift() ?? enc('Done.<|im_end|>');
    // vLLM leaves the stop token out of the text and in the token ids
    const text = (await qwen.decode(ids)).replace(/<\|im_end\|>$/, '');
    return {
      id: 'cmpl-1',
      object: 'text_completion',
      created: 1700000000,
      model: b.model,
      choices: [{ index: 0, text, token_ids: ids, logprobs: null, finish_reason: 'stop', stop_reason: null }],
      usage: {
        prompt_tokens: b.prompt.length,
        completion_tokens: ids.length,
        total_tokens: b.prompt.length + ids.length,
      },
    };
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const a = app.server.address();
  url = `http://127.0.0.1:${typeof a === 'object' && a ? a.port : 0}`;
});
afterAll(() => app.close());

async function complete(prompt: number[]) {
  const res = await fetch(`${url}/v1/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'qwen3', prompt, return_token_ids: true }),
  });
  return res.json();
}

const startsWith = (a: number[], p: number[]) => a.length >= p.length && p.every((t, i) => a[i] === t);

const tools = [
  {
    type: 'function',
    function: {
      name: 'read_file',
      description: 'Read a file',
      parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
    },
  },
];

describe('bridging a tool-using conversation through the backend tokenizer', () => {
  it('three calls form one token-exact sequence, where naive rendering would break it twice', async () => {
    const tok = backendTokenizer(`${url}/v1`, { model: 'qwen3' });
    // call 1: the model thinks, then calls the tool with compact JSON and a non-canonical token split
    samples.push([
      ...enc(
        '<think>\nRead the file first.\n</think>\n\n<tool_call>\n{"name":"read_file","arguments":{"path":"no',
      ),
      ...enc('tes.md"}}\n</tool_call><|im_end|>'),
    ]);
    const m1: ChatMessageLike[] = [{ role: 'user', content: 'What is in notes.md?' }];
    const p1 = await tok.render(m1, tools, true);
    const c1 = await complete(p1);
    const chat1 = completionToChat(c1, { model: 'qwen3', prompt_ids: p1 });
    const a1 = chat1.choices[0].message;
    expect(a1.tool_calls[0].function).toEqual({ name: 'read_file', arguments: '{"path":"notes.md"}' });
    expect(a1.reasoning_content).toBe('\nRead the file first.\n');
    const r1: number[] = chat1.choices[0].token_ids;

    // call 2: the harness resends history as text (no reasoning), plus the tool result
    samples.push(enc('<think>\nSummarise.\n</think>\n\nIt lists three todos.<|im_end|>'));
    const m2: ChatMessageLike[] = [
      ...m1,
      { role: 'assistant', content: null, tool_calls: a1.tool_calls },
      { role: 'tool', tool_call_id: a1.tool_calls[0].id, content: '- a\n- b\n- c' },
    ];
    const plan2 = await planBridge({
      previous: { messages: m1, tools, prompt_ids: p1, response_ids: r1, assistant_message: a1 },
      request: { messages: m2, tools },
      tokenizer: tok,
    });
    if (!plan2.ok) throw new Error(plan2.reason);
    expect(startsWith(plan2.prompt_ids, [...p1, ...r1])).toBe(true);
    expect(startsWith(await tok.render(m2, tools, true), [...p1, ...r1])).toBe(false);
    const c2 = await complete(plan2.prompt_ids);
    expect(prompts.at(-1)).toEqual(plan2.prompt_ids);
    const chat2 = completionToChat(c2, { model: 'qwen3', prompt_ids: plan2.prompt_ids });
    const a2 = chat2.choices[0].message;
    expect(a2.content).toBe('\n\nIt lists three todos.');
    const r2: number[] = chat2.choices[0].token_ids;

    // call 3: a new user question
    const m3: ChatMessageLike[] = [
      ...m2,
      { role: 'assistant', content: 'It lists three todos.' },
      { role: 'user', content: 'Which is first?' },
    ];
    // the third call, planned with a given tokenizer
    const planThird = (tokenizer: typeof tok | typeof qwen) =>
      planBridge({
        previous: {
          messages: m2,
          tools,
          prompt_ids: plan2.prompt_ids,
          response_ids: r2,
          assistant_message: a2,
        },
        request: { messages: m3, tools },
        tokenizer,
      });
    const before = calls.tokenize + calls.detokenize;
    const plan3 = await planThird(tok);
    const httpCalls = calls.tokenize + calls.detokenize - before;
    if (!plan3.ok) throw new Error(plan3.reason);
    const sequence = [...plan2.prompt_ids, ...r2];
    expect(startsWith(plan3.prompt_ids, sequence)).toBe(true);
    expect(startsWith(await tok.render(m3, tools, true), sequence)).toBe(false);
    // the whole conversation is one sample under exact merge: every prompt extends the previous sequence
    expect(startsWith(plan3.prompt_ids, [...p1, ...r1])).toBe(true);
    expect(plan3.reused_tokens).toBe(sequence.length);
    // and the backend tokenizer gives the same plan as the local one
    const local = await planThird(qwen);
    expect(local).toEqual(plan3);
    expect(httpCalls).toBeLessThan(30);
  });
});

describe('bridging over the proxy fake vLLM', () => {
  let fake: FakeVllm;
  beforeAll(async () => {
    fake = await startFakeVllm({ model: 'toy' });
  });
  afterAll(() => fake.close());

  it('when plain re-rendering is already consistent, the bridged prompt equals it exactly', async () => {
    const m1 = [{ role: 'user', content: 'hello' }];
    const res = await fetch(`${fake.url}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'toy', messages: m1, return_token_ids: true }),
    });
    const chat = (await res.json()) as { choices: { message: ChatMessageLike }[] };
    const produced = fake.produced.at(-1)!;
    const tok = backendTokenizer(fake.url, { model: 'toy' });
    const m2 = [
      ...m1,
      { role: 'assistant', content: chat.choices[0].message.content },
      { role: 'user', content: 'again' },
    ];
    const plan = await planBridge({
      previous: {
        messages: m1,
        prompt_ids: produced.prompt_ids,
        response_ids: produced.choices[0].ids,
        assistant_message: chat.choices[0].message,
      },
      request: { messages: m2 },
      tokenizer: tok,
    });
    expect(plan).toEqual({
      ok: true,
      prompt_ids: await tok.render(m2, undefined, true),
      reused_tokens: produced.prompt_ids.length + produced.choices[0].ids.length,
      thinking: false,
    });
  });
});
