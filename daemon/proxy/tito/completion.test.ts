import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ChatAccumulator } from '../translate/common';
import type { ChatChunk } from '../translate/types';
import {
  CompletionToChatStream,
  completionRequestFor,
  completionToChat,
  parseAssistantText,
  utf8Bytes,
} from './completion';

describe('parsing the sampled assistant text', () => {
  it('splits <think> into reasoning and content as vLLM does (raw text, no stripping)', () => {
    expect(parseAssistantText('<think>\nLet me think.\n</think>\n\nThe answer is 4.')).toEqual({
      reasoning: '\nLet me think.\n',
      content: '\n\nThe answer is 4.',
      toolCalls: [],
    });
  });

  it('turns Hermes <tool_call> blocks into tool calls with JSON-string arguments, keeping text before them', () => {
    const text =
      'I will read both.\n<tool_call>\n{"name": "read_file", "arguments": {"path": "a.txt"}}\n</tool_call>\n<tool_call>\n{"name":"read_file","arguments":{"path":"b.txt"}}\n</tool_call>';
    expect(parseAssistantText(text)).toEqual({
      reasoning: null,
      content: 'I will read both.\n',
      toolCalls: [
        { name: 'read_file', arguments: '{"path":"a.txt"}' },
        { name: 'read_file', arguments: '{"path":"b.txt"}' },
      ],
    });
  });

  it('keeps an unparseable tool call as text and accepts an unclosed last call', () => {
    expect(parseAssistantText('<tool_call>\nnot json\n</tool_call>')).toMatchObject({
      content: '<tool_call>\nnot json\n</tool_call>',
      toolCalls: [],
    });
    expect(parseAssistantText('<tool_call>\n{"name": "ls", "arguments": {}}\n')).toMatchObject({
      toolCalls: [{ name: 'ls', arguments: '{}' }],
    });
  });

  it('output that starts inside a think block opened by the prompt', () => {
    expect(parseAssistantText('plan it\n</think>\n\nDone.', { thinking: true })).toEqual({
      reasoning: 'plan it\n',
      content: '\n\nDone.',
      toolCalls: [],
    });
  });

  it('a think block cut by max_tokens is all reasoning', () => {
    expect(parseAssistantText('<think>\nstill going')).toEqual({
      reasoning: '\nstill going',
      content: '',
      toolCalls: [],
    });
  });
});

const completion = (text: string, finish = 'stop') => ({
  id: 'cmpl-abc',
  object: 'text_completion',
  created: 1700000000,
  model: 'qwen3',
  choices: [
    {
      index: 0,
      text,
      token_ids: [...text].map((_, i) => 1000 + i),
      logprobs: {
        tokens: [...text],
        token_logprobs: [...text].map((_, i) => -i / 100),
        top_logprobs: null,
        text_offset: [],
      },
      finish_reason: finish,
      stop_reason: null,
    },
  ],
  usage: { prompt_tokens: 3, completion_tokens: text.length, total_tokens: 3 + text.length },
});

/** Cut a completion into streaming chunks at the given positions (one token per character here). */
function chunks(c: ReturnType<typeof completion>, cuts: number[]) {
  const text = c.choices[0].text;
  const bounds = [
    0,
    ...[...new Set(cuts)].filter((x) => x > 0 && x < text.length).sort((a, b) => a - b),
    text.length,
  ];
  const out: Record<string, unknown>[] = [];
  for (let i = 0; i + 1 < bounds.length; i++) {
    const [a, b] = [bounds[i], bounds[i + 1]];
    out.push({
      id: c.id,
      created: c.created,
      choices: [
        {
          index: 0,
          text: text.slice(a, b),
          token_ids: c.choices[0].token_ids.slice(a, b),
          logprobs: {
            tokens: [...text.slice(a, b)],
            token_logprobs: c.choices[0].logprobs.token_logprobs.slice(a, b),
          },
          finish_reason: b === text.length ? c.choices[0].finish_reason : null,
        },
      ],
    });
  }
  return out;
}

const withoutIds = (r: any) => {
  const m = r.choices[0].message;
  return {
    ...m,
    tool_calls: m.tool_calls?.map((t: any) => ({ ...t, id: 'x' })),
    finish: r.choices[0].finish_reason,
  };
};

describe('completion → chat completion', () => {
  it('gives a token’s UTF-8 bytes as Buffer does, ASCII or not', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), (t) => {
        expect(utf8Bytes(t)).toEqual([...Buffer.from(t, 'utf8')]);
      }),
      { numRuns: 500 },
    );
    expect(utf8Bytes('ab\u00e9')).toEqual([97, 98, 0xc3, 0xa9]);
  });

  const text =
    '<think>\nNeed the file.\n</think>\n\nReading.\n<tool_call>\n{"name": "read_file", "arguments": {"path": "a.txt"}}\n</tool_call>';

  it('gives a chat completion with reasoning, tool calls, token ids, logprobs and the prompt ids', () => {
    const r = completionToChat(completion(text), { model: 'qwen3', prompt_ids: [1, 2, 3] });
    expect(r.object).toBe('chat.completion');
    expect(r.choices[0].message).toMatchObject({
      role: 'assistant',
      content: '\n\nReading.\n',
      reasoning_content: '\nNeed the file.\n',
      tool_calls: [{ type: 'function', function: { name: 'read_file', arguments: '{"path":"a.txt"}' } }],
    });
    expect(r.choices[0].finish_reason).toBe('tool_calls');
    expect(r.choices[0].token_ids).toHaveLength(text.length);
    expect(r.choices[0].logprobs.content[5]).toMatchObject({ token: text[5], logprob: -0.05 });
    expect(r.prompt_token_ids).toEqual([1, 2, 3]);
    expect(r.usage).toEqual({
      prompt_tokens: 3,
      completion_tokens: text.length,
      total_tokens: 3 + text.length,
    });
  });

  it('streamed in any chunking, the chat chunks assemble to the non-streaming result with every token id', () => {
    const samples = [
      text,
      'Plain answer, no tags.',
      '<think>\n</think>\n\n<tool_call>\n{"name":"ls","arguments":{}}\n</tool_call>',
      '<think>\ncut off mid thou',
      'a < b and <tool_ca is not a call',
    ];
    fc.assert(
      fc.property(
        fc.constantFrom(...samples),
        fc.array(fc.nat({ max: 120 }), { maxLength: 30 }),
        (t, cuts) => {
          const c = completion(t, t.includes('cut off') ? 'length' : 'stop');
          const s = new CompletionToChatStream({ model: 'qwen3', prompt_ids: [1, 2, 3] });
          const out = [...chunks(c, cuts).flatMap((k) => s.push(k)), ...s.end()];
          const acc = new ChatAccumulator();
          for (const k of out) acc.add(k as unknown as ChatChunk);
          const expected = completionToChat(c, { model: 'qwen3', prompt_ids: [1, 2, 3] });
          expect(withoutIds(acc.response())).toEqual(withoutIds(expected));
          expect(out.flatMap((k: any) => k.choices[0]?.token_ids ?? [])).toEqual(c.choices[0].token_ids);
          expect(out[0].prompt_token_ids).toEqual([1, 2, 3]);
          expect(out.at(-1)?.usage).toEqual(expected.usage);
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe('the completions request for a bridged prompt', () => {
  it('carries the sampling settings, token ids and logprobs over from the chat request', () => {
    const r = completionRequestFor(
      {
        model: 'qwen3',
        messages: [],
        max_completion_tokens: 50,
        temperature: 0.7,
        top_k: 20,
        stop: ['END'],
        n: 2,
        logprobs: true,
        stream: true,
        stream_options: { include_usage: true },
        tools: [{ type: 'function', function: { name: 'x' } }],
        tool_choice: 'auto',
        user: 'u',
      },
      [1, 2, 3],
    );
    expect(r).toEqual({
      ok: true,
      body: {
        model: 'qwen3',
        prompt: [1, 2, 3],
        max_tokens: 50,
        temperature: 0.7,
        top_k: 20,
        stop: ['END'],
        n: 2,
        logprobs: 0,
        stream: true,
        stream_options: { include_usage: true },
        return_token_ids: true,
      },
    });
  });

  it('refuses what a token prompt cannot honour, and a missing length limit', () => {
    const base = { model: 'm', messages: [], max_tokens: 10 };
    expect(completionRequestFor({ ...base, tool_choice: 'required' }, [1])).toMatchObject({ ok: false });
    expect(completionRequestFor({ ...base, response_format: { type: 'json_object' } }, [1])).toMatchObject({
      ok: false,
      reason: expect.stringMatching(/structured output/),
    });
    expect(completionRequestFor({ model: 'm', messages: [] }, [1])).toMatchObject({ ok: false });
    expect(completionRequestFor({ model: 'm', messages: [] }, [1], { defaultMaxTokens: 99 })).toMatchObject({
      ok: true,
      body: { max_tokens: 99 },
    });
  });
});
