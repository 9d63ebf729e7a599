import { Template } from '@huggingface/jinja';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ZodError } from 'zod';
import { qwen3ChatTemplate } from '../../tokenize/qwen3';
import { countTokens, messagesTranslator as t } from './messages';
import { chatChunksFor, chatResponseFor, parseSse, type ScriptedTurn } from './test-kit';

const base = { model: 'qwen3', max_tokens: 256 };

function parseError(body: unknown): ZodError {
  try {
    t.parse(body);
  } catch (e) {
    if (e instanceof ZodError) return e;
    throw e;
  }
  throw new Error('parse accepted the body');
}

/** Rebuild a Message from SSE frames the way a client SDK does. */
function accumulate(frames: string[]) {
  const events = parseSse(frames.join(''));
  let msg: any = null;
  const json: Record<number, string> = {};
  for (const { event, data } of events) {
    expect(event).toBe(data.type);
    if (data.type === 'message_start') msg = structuredClone(data.message);
    else if (data.type === 'content_block_start')
      msg.content[data.index] = structuredClone(data.content_block);
    else if (data.type === 'content_block_delta') {
      const b = msg.content[data.index];
      if (data.delta.type === 'text_delta') b.text += data.delta.text;
      if (data.delta.type === 'thinking_delta') b.thinking += data.delta.thinking;
      if (data.delta.type === 'input_json_delta')
        json[data.index] = (json[data.index] ?? '') + data.delta.partial_json;
    } else if (data.type === 'content_block_stop') {
      if (json[data.index] !== undefined) msg.content[data.index].input = JSON.parse(json[data.index]);
    } else if (data.type === 'message_delta') {
      Object.assign(msg, data.delta);
      Object.assign(msg.usage, data.usage);
    }
  }
  return { msg, types: events.map((e) => e.data.type as string) };
}

describe('Anthropic Messages → chat request', () => {
  it('turns system blocks, thinking, tool_use and tool_result blocks into chat messages in order', () => {
    const req = t.parse({
      ...base,
      system: [
        { type: 'text', text: 'You are terse.' },
        { type: 'text', text: 'Use tools.', cache_control: { type: 'ephemeral' } },
      ],
      messages: [
        { role: 'user', content: 'What is the weather in Paris and Rome?' },
        {
          role: 'assistant',
          content: [
            { type: 'thinking', thinking: 'Need the tool twice.', signature: 'sig' },
            { type: 'text', text: 'Checking.' },
            { type: 'tool_use', id: 'toolu_1', name: 'weather', input: { city: 'Paris' } },
            { type: 'tool_use', id: 'toolu_2', name: 'weather', input: { city: 'Rome' } },
          ],
        },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: 'toolu_1', content: '18C' },
            {
              type: 'tool_result',
              tool_use_id: 'toolu_2',
              content: [{ type: 'text', text: 'timeout' }],
              is_error: true,
            },
            { type: 'text', text: 'Thanks, and Oslo?' },
          ],
        },
      ],
    });
    expect(t.toChat(req).messages).toEqual([
      { role: 'system', content: 'You are terse.\n\nUse tools.' },
      { role: 'user', content: 'What is the weather in Paris and Rome?' },
      {
        role: 'assistant',
        content: 'Checking.',
        reasoning_content: 'Need the tool twice.',
        tool_calls: [
          { id: 'toolu_1', type: 'function', function: { name: 'weather', arguments: '{"city":"Paris"}' } },
          { id: 'toolu_2', type: 'function', function: { name: 'weather', arguments: '{"city":"Rome"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'toolu_1', content: '18C' },
      { role: 'tool', tool_call_id: 'toolu_2', content: 'Error: timeout' },
      { role: 'user', content: 'Thanks, and Oslo?' },
    ]);
  });

  it('maps tools, tool_choice, stop sequences and sampling settings to their chat names', () => {
    const chat = t.toChat(
      t.parse({
        ...base,
        messages: [{ role: 'user', content: 'hi' }],
        tools: [
          { name: 'weather', description: 'Weather', input_schema: { type: 'object', properties: {} } },
        ],
        tool_choice: { type: 'any', disable_parallel_tool_use: true },
        stop_sequences: ['END'],
        temperature: 0.7,
        top_p: 0.9,
        top_k: 20,
        stream: true,
        metadata: { user_id: 'u1' },
      }),
    );
    expect(chat).toMatchObject({
      model: 'qwen3',
      max_tokens: 256,
      tools: [
        {
          type: 'function',
          function: {
            name: 'weather',
            description: 'Weather',
            parameters: { type: 'object', properties: {} },
          },
        },
      ],
      tool_choice: 'required',
      parallel_tool_calls: false,
      stop: ['END'],
      temperature: 0.7,
      top_p: 0.9,
      top_k: 20,
      user: 'u1',
      stream: true,
      stream_options: { include_usage: true },
    });
    const named = t.toChat(
      t.parse({
        ...base,
        messages: [{ role: 'user', content: 'hi' }],
        tool_choice: { type: 'tool', name: 'weather' },
      }),
    ).tool_choice;
    expect(named).toEqual({ type: 'function', function: { name: 'weather' } });
  });

  it('rejects an image block with an error naming the block and saying images are unsupported', () => {
    const e = parseError({
      ...base,
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'look' },
            { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'AAAA' } },
          ],
        },
      ],
    });
    expect(e.issues[0].path).toEqual(['messages', 0, 'content', 1]);
    expect(e.issues[0].message).toMatch(/image content is not supported/);
  });

  it("leaves a server tool (Claude Code's WebSearch) out of the backend request, saying why", () => {
    const req = t.parse({
      ...base,
      messages: [{ role: 'user', content: 'search for x' }],
      tools: [
        { type: 'web_search_20250305', name: 'web_search', max_uses: 3 },
        { name: 'Bash', input_schema: { type: 'object' } },
      ],
    });
    expect((t.toChat(req).tools ?? []).map((x: any) => x.function.name)).toEqual(['Bash']);
    expect(t.leftOut?.(req)).toEqual([
      { path: 'tools[0]', tool: 'web_search_20250305', reason: expect.stringMatching(/server tool/) },
    ]);
    const e = parseError({ ...base, messages: [{ role: 'user', content: 'hi' }], tools: [{ name: 'Bash' }] });
    expect(e.issues[0].path).toEqual(['tools', 0, 'input_schema']);
  });

  it('requires max_tokens, naming the field', () => {
    const e = parseError({ model: 'm', messages: [{ role: 'user', content: 'hi' }] });
    expect(e.issues[0].path).toEqual(['max_tokens']);
  });

  it('gives an Anthropic error body', () => {
    expect(t.errorBody(400, 'bad', 'max_tokens')).toEqual({
      type: 'error',
      error: { type: 'invalid_request_error', message: 'max_tokens: bad' },
    });
    expect(t.errorBody(529, 'busy')).toMatchObject({ error: { type: 'overloaded_error' } });
    expect(t.errorBody(502, 'backend down')).toMatchObject({ error: { type: 'api_error' } });
  });
});

const turns: Record<string, ScriptedTurn> = {
  text: { content: 'Hello there, how can I help?' },
  thinkingAndTools: {
    reasoning: 'The user wants weather; call the tool.',
    content: 'Let me check.',
    toolCalls: [
      { id: 'call_a', name: 'weather', arguments: '{"city": "Paris"}' },
      { id: 'call_b', name: 'weather', arguments: '{"city": "Rome", "unit": "C"}' },
    ],
  },
  toolOnly: { toolCalls: [{ id: 'call_c', name: 'noop', arguments: '' }] },
  truncated: { content: 'This answer was cut', finish: 'length' },
  stopSeq: { content: 'Done', stopReason: 'END' },
};

describe('chat response → Anthropic Message', () => {
  const req = t.parse({ ...base, stop_sequences: ['END'], messages: [{ role: 'user', content: 'hi' }] });

  it('returns thinking, text and tool_use blocks with parsed inputs and tool_use stop reason', () => {
    const msg = t.fromChat(chatResponseFor(turns.thinkingAndTools), req) as any;
    expect(msg).toMatchObject({
      type: 'message',
      role: 'assistant',
      model: 'qwen3',
      stop_reason: 'tool_use',
      stop_sequence: null,
      usage: { input_tokens: 11, output_tokens: 7 },
    });
    expect(msg.id).toMatch(/^msg_/);
    expect(msg.content).toEqual([
      { type: 'thinking', thinking: 'The user wants weather; call the tool.', signature: '' },
      { type: 'text', text: 'Let me check.' },
      { type: 'tool_use', id: 'call_a', name: 'weather', input: { city: 'Paris' } },
      { type: 'tool_use', id: 'call_b', name: 'weather', input: { city: 'Rome', unit: 'C' } },
    ]);
  });

  it('maps length to max_tokens and a matched stop string to stop_sequence', () => {
    expect(t.fromChat(chatResponseFor(turns.truncated), req)).toMatchObject({ stop_reason: 'max_tokens' });
    expect(t.fromChat(chatResponseFor(turns.stopSeq), req)).toMatchObject({
      stop_reason: 'stop_sequence',
      stop_sequence: 'END',
    });
    expect(t.fromChat(chatResponseFor(turns.text), req)).toMatchObject({ stop_reason: 'end_turn' });
    // a backend that says tool_calls but produced none (unparseable call text) ends the turn
    expect(
      t.fromChat(chatResponseFor({ content: '<tool_call>oops', finish: 'tool_calls' }), req),
    ).toMatchObject({
      stop_reason: 'end_turn',
    });
  });

  it('keeps vLLM token ids and logprobs out of the wire response', () => {
    const s = JSON.stringify(t.fromChat(chatResponseFor(turns.thinkingAndTools), req));
    expect(s).not.toMatch(/token_ids|logprob/);
  });
});

describe('streaming Anthropic Messages', () => {
  const req = t.parse({
    ...base,
    stream: true,
    stop_sequences: ['END'],
    messages: [{ role: 'user', content: 'hi' }],
  });

  for (const [name, turn] of Object.entries(turns)) {
    it(`frames of a "${name}" turn rebuild exactly the non-streaming message`, () => {
      const ws = t.stream(req);
      const frames = [...chatChunksFor(turn).flatMap((c) => ws.chunk(c)), ...ws.end()];
      const expected = t.fromChat(chatResponseFor(turn), req) as any;
      const { msg, types } = accumulate(frames);
      expect({ ...msg, id: expected.id }).toEqual(expected);
      expect(ws.assembled()).toEqual(expected);
      expect(types.slice(0, 2)).toEqual(['message_start', 'ping']);
      expect(types.slice(-2)).toEqual(['message_delta', 'message_stop']);
      expect(frames.join('')).not.toMatch(/token_ids|logprob|\[DONE\]/);
    });
  }

  it('any turn in any fragment size streams to exactly the non-streaming message', () => {
    const turn = fc.record(
      {
        reasoning: fc.string({ maxLength: 20 }),
        content: fc.string({ maxLength: 30 }),
        toolCalls: fc.array(
          fc.record({
            id: fc.constantFrom('c1', 'c2', 'c3'),
            name: fc.constantFrom('ls', 'cat'),
            arguments: fc.dictionary(fc.string({ maxLength: 4 }), fc.integer()).map((d) => JSON.stringify(d)),
          }),
          { maxLength: 3 },
        ),
        finish: fc.constantFrom('stop' as const, 'length' as const, 'tool_calls' as const),
      },
      { requiredKeys: [] },
    );
    fc.assert(
      fc.property(turn, fc.integer({ min: 1, max: 7 }), (tn, size) => {
        const ws = t.stream(req);
        const frames = [...chatChunksFor(tn, 'm', size).flatMap((c) => ws.chunk(c)), ...ws.end()];
        const expected = t.fromChat(chatResponseFor(tn), req) as any;
        expect(ws.assembled()).toEqual(expected);
        const { msg } = accumulate(frames);
        expect({ ...msg, id: expected.id }).toEqual(expected);
      }),
      { numRuns: 200 },
    );
  });

  it('opens and closes one content block per thinking, text and tool call, in order', () => {
    const ws = t.stream(req);
    const frames = [...chatChunksFor(turns.thinkingAndTools).flatMap((c) => ws.chunk(c)), ...ws.end()];
    const blockEvents = parseSse(frames.join(''))
      .map((e) => e.data)
      .filter((d) => d.type === 'content_block_start' || d.type === 'content_block_stop')
      .map(
        (d) => `${d.type === 'content_block_start' ? `start:${d.content_block.type}` : 'stop'}@${d.index}`,
      );
    expect(blockEvents).toEqual([
      'start:thinking@0',
      'stop@0',
      'start:text@1',
      'stop@1',
      'start:tool_use@2',
      'stop@2',
      'start:tool_use@3',
      'stop@3',
    ]);
  });

  it('reports a mid-stream failure as an `event: error` frame', () => {
    const ws = t.stream(req);
    ws.chunk(chatChunksFor(turns.text)[0]);
    const [frame] = ws.error('backend went away');
    expect(frame.startsWith('event: error\n')).toBe(true);
    expect(parseSse(frame)[0].data).toEqual({
      type: 'error',
      error: { type: 'api_error', message: 'backend went away' },
    });
    expect(ws.end()).toEqual([]);
  });
});

describe('count_tokens', () => {
  it('counts the chat rendering of the request without needing max_tokens', async () => {
    const seen: unknown[] = [];
    const r = await countTokens(
      { model: 'm', system: 'sys', messages: [{ role: 'user', content: 'hello' }] },
      async (chat) => {
        seen.push(chat.messages);
        return 42;
      },
    );
    expect(r).toEqual({ input_tokens: 42 });
    expect(seen).toEqual([
      [
        { role: 'system', content: 'sys' },
        { role: 'user', content: 'hello' },
      ],
    ]);
  });
});

describe("Claude Code's system messages inside messages", () => {
  // Qwen3.5 / 3.6 guard the first message: a system message anywhere else raises.
  const guarded = qwen3ChatTemplate.replace(
    '{%- for message in messages %}\n    {%- if (message.role == "user")',
    '{%- for message in messages %}\n    {%- if message.role == "system" and not loop.first %}{{- raise_exception("System message must be at the beginning.") }}{%- endif %}\n    {%- if (message.role == "user")',
  );
  const render = (source: string, messages: unknown[], tools?: unknown[]) =>
    new Template(source).render({
      messages,
      tools,
      add_generation_prompt: true,
      bos_token: '',
      eos_token: '',
    });
  const tools = [{ name: 'Bash', description: 'Run a command', input_schema: { type: 'object' } }];
  /** The shape of Claude Code 2.1.2xx's first request: its environment as a system message after the task. */
  const first = {
    ...base,
    system: [
      { type: 'text' as const, text: 'You are Claude Code.' },
      { type: 'text' as const, text: 'Use the tools.' },
    ],
    tools,
    messages: [
      {
        role: 'user' as const,
        content: [
          { type: 'text' as const, text: '<system-reminder>CLAUDE.md says: be brief</system-reminder>' },
          { type: 'text' as const, text: 'write hello.txt' },
        ],
      },
      { role: 'system' as const, content: 'Working directory: /tmp/x\nPlatform: linux' },
    ],
  };

  it('joins a system message before the first assistant turn to the leading one, which every Qwen template renders', () => {
    expect(guarded).not.toBe(qwen3ChatTemplate);
    const chat = t.toChat(t.parse(first));
    expect(chat.messages).toEqual([
      {
        role: 'system',
        content: 'You are Claude Code.\n\nUse the tools.\n\nWorking directory: /tmp/x\nPlatform: linux',
      },
      {
        role: 'user',
        content: '<system-reminder>CLAUDE.md says: be brief</system-reminder>\nwrite hello.txt',
      },
    ]);
    const chatTools = (chat.tools ?? []).map((x: any) => x);
    // what the proxy used to send ([system, user, system]) is what the guard refuses
    expect(() => render(guarded, [...chat.messages, { role: 'system', content: 'late' }], chatTools)).toThrow(
      /System message must be at the beginning/,
    );
    for (const source of [qwen3ChatTemplate, guarded]) {
      const text = render(source, chat.messages, chatTools);
      expect(text.match(/<\|im_start\|>system/g)).toHaveLength(1);
      expect(text).toContain('Working directory: /tmp/x');
    }
  });

  it('keeps a system message after an assistant turn in place as user text, so earlier calls stay a prefix', () => {
    const second = {
      ...first,
      messages: [
        ...first.messages,
        {
          role: 'assistant' as const,
          content: [{ type: 'tool_use' as const, id: 't1', name: 'Bash', input: { command: 'ls' } }],
        },
        {
          role: 'user' as const,
          content: [{ type: 'tool_result' as const, tool_use_id: 't1', content: 'a.txt' }],
        },
        { role: 'system' as const, content: 'New agent types are available.' },
      ],
    };
    const before = t.toChat(t.parse(first)).messages;
    const after = t.toChat(t.parse(second)).messages;
    expect(after.slice(0, before.length)).toEqual(before);
    expect(after.slice(before.length)).toEqual([
      {
        role: 'assistant',
        content: '',
        tool_calls: [
          { id: 't1', type: 'function', function: { name: 'Bash', arguments: '{"command":"ls"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 't1', content: 'a.txt' },
      { role: 'user', content: 'New agent types are available.' },
    ]);
    const chatTools = t.toChat(t.parse(second)).tools as unknown[];
    for (const source of [qwen3ChatTemplate, guarded]) {
      const a = render(source, before, chatTools);
      const b = render(source, after, chatTools);
      expect(b.startsWith(a.slice(0, a.lastIndexOf('<|im_start|>assistant')))).toBe(true);
    }
  });
});
