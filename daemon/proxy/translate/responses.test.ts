import fc from 'fast-check';
import { accumulateResponse } from 'openai/lib/responses/ResponseAccumulator';
import type { Response, ResponseStreamEvent } from 'openai/resources/responses/responses';
import { describe, expect, it } from 'vitest';
import { ZodError } from 'zod';
import { responsesTranslator as t } from './responses';
import { chatChunksFor, chatResponseFor, parseSse, type ScriptedTurn } from './test-kit';

function parseError(body: unknown): ZodError {
  try {
    t.parse(body);
  } catch (e) {
    if (e instanceof ZodError) return e;
    throw e;
  }
  throw new Error('parse accepted the body');
}

describe('OpenAI Responses → chat request', () => {
  it('folds reasoning, message and function_call items of one turn into one assistant message', () => {
    const req = t.parse({
      model: 'qwen3',
      instructions: 'You are a coding agent.',
      input: [
        { role: 'developer', content: 'Prefer small diffs.' },
        { role: 'user', content: [{ type: 'input_text', text: 'List files and read README' }] },
        {
          type: 'reasoning',
          id: 'rs_1',
          summary: [],
          content: [{ type: 'reasoning_text', text: 'Two tools.' }],
        },
        {
          type: 'message',
          role: 'assistant',
          id: 'msg_1',
          status: 'completed',
          content: [{ type: 'output_text', text: 'Looking.', annotations: [] }],
        },
        { type: 'function_call', call_id: 'c1', name: 'ls', arguments: '{"path":"."}' },
        { type: 'function_call', call_id: 'c2', name: 'cat', arguments: '{"path":"README"}' },
        { type: 'function_call_output', call_id: 'c1', output: 'README\nsrc' },
        { type: 'function_call_output', call_id: 'c2', output: [{ type: 'input_text', text: '# Hi' }] },
        { type: 'function_call', call_id: 'c3', name: 'ls', arguments: '{"path":"src"}' },
        { type: 'function_call_output', call_id: 'c3', output: 'main.ts' },
        { type: 'message', role: 'user', content: 'Now summarise.' },
      ],
    });
    expect(t.toChat(req).messages).toEqual([
      { role: 'system', content: 'You are a coding agent.' },
      { role: 'system', content: 'Prefer small diffs.' },
      { role: 'user', content: 'List files and read README' },
      {
        role: 'assistant',
        content: 'Looking.',
        reasoning_content: 'Two tools.',
        tool_calls: [
          { id: 'c1', type: 'function', function: { name: 'ls', arguments: '{"path":"."}' } },
          { id: 'c2', type: 'function', function: { name: 'cat', arguments: '{"path":"README"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'c1', content: 'README\nsrc' },
      { role: 'tool', tool_call_id: 'c2', content: '# Hi' },
      {
        role: 'assistant',
        content: '',
        tool_calls: [{ id: 'c3', type: 'function', function: { name: 'ls', arguments: '{"path":"src"}' } }],
      },
      { role: 'tool', tool_call_id: 'c3', content: 'main.ts' },
      { role: 'user', content: 'Now summarise.' },
    ]);
  });

  it('takes a string input as one user message and maps tools and settings', () => {
    const chat = t.toChat(
      t.parse({
        model: 'qwen3',
        input: 'hello',
        tools: [
          { type: 'function', name: 'ls', description: 'List', parameters: { type: 'object' }, strict: true },
        ],
        tool_choice: { type: 'function', name: 'ls' },
        max_output_tokens: 100,
        temperature: 0.6,
        top_p: 0.95,
        parallel_tool_calls: false,
        stream: true,
        text: { format: { type: 'json_schema', name: 'out', schema: { type: 'object' } } },
      }),
    );
    expect(chat).toEqual({
      model: 'qwen3',
      messages: [{ role: 'user', content: 'hello' }],
      tools: [
        {
          type: 'function',
          function: { name: 'ls', description: 'List', parameters: { type: 'object' }, strict: true },
        },
      ],
      tool_choice: { type: 'function', function: { name: 'ls' } },
      max_tokens: 100,
      temperature: 0.6,
      top_p: 0.95,
      parallel_tool_calls: false,
      response_format: { type: 'json_schema', json_schema: { name: 'out', schema: { type: 'object' } } },
      stream: true,
      stream_options: { include_usage: true },
    });
  });

  it('refuses images and previous_response_id naming the field', () => {
    const img = parseError({
      model: 'm',
      input: [{ role: 'user', content: [{ type: 'input_image', image_url: 'data:,' }] }],
    });
    expect(img.issues[0].path).toEqual(['input', 0, 'content', 0]);
    expect(img.issues[0].message).toMatch(/input_image is not supported/);
    const tool = parseError({ model: 'm', input: 'x', tools: [{ type: 'function', parameters: {} }] });
    expect(tool.issues[0].path).toEqual(['tools', 0, 'name']);
    const prev = parseError({ model: 'm', input: 'x', previous_response_id: 'resp_1' });
    expect(prev.issues[0].path).toEqual(['previous_response_id']);
    expect(prev.issues[0].message).toMatch(/whole conversation/);
  });

  it("sends Codex's namespaced tools as qualified function tools and leaves hosted tools out, saying why", () => {
    const req = t.parse({
      model: 'm',
      input: [
        { role: 'user', content: 'start a helper' },
        {
          type: 'function_call',
          call_id: 'c1',
          name: 'spawn_agent',
          namespace: 'multi_agent_v1',
          arguments: '{}',
        },
        { type: 'function_call_output', call_id: 'c1', output: 'spawned' },
      ],
      tools: [
        { type: 'function', name: 'shell', parameters: { type: 'object' }, strict: false },
        {
          type: 'namespace',
          name: 'multi_agent_v1',
          description: 'Sub-agents',
          tools: [
            {
              type: 'function',
              name: 'spawn_agent',
              description: 'Start one',
              parameters: { type: 'object' },
            },
            { type: 'function', name: 'wait_agent', defer_loading: true },
            { type: 'custom', name: 'patch', format: { type: 'text' } },
          ],
        },
        { type: 'web_search', external_web_access: false },
        { type: 'custom', name: 'apply_patch' },
      ],
    });
    const chat = t.toChat(req);
    expect((chat.tools ?? []).map((x: any) => x.function.name)).toEqual([
      'shell',
      'multi_agent_v1__spawn_agent',
      'multi_agent_v1__wait_agent',
    ]);
    expect((chat.tools as any)[1].function).toEqual({
      name: 'multi_agent_v1__spawn_agent',
      description: 'Start one',
      parameters: { type: 'object' },
    });
    expect((chat.tools as any)[2].function.parameters).toEqual({ type: 'object', properties: {} });
    expect((chat.messages[1] as any).tool_calls[0].function.name).toBe('multi_agent_v1__spawn_agent');
    expect(t.leftOut?.(req)).toEqual([
      { path: 'tools[1].tools[2]', tool: 'multi_agent_v1.patch', reason: expect.stringMatching(/custom/) },
      { path: 'tools[2]', tool: 'web_search', reason: expect.stringMatching(/hosted tool/) },
      { path: 'tools[3]', tool: 'apply_patch', reason: expect.stringMatching(/custom/) },
    ]);
    // the response echoes the tools as the client sent them
    const r = t.fromChat(chatResponseFor({ content: 'ok' }), req) as any;
    expect(r.tools[2]).toEqual({ type: 'web_search', external_web_access: false });
    expect(r.tools[1].type).toBe('namespace');
  });

  it('refuses two tools that would reach the backend under one name', () => {
    const req = t.parse({
      model: 'm',
      input: 'x',
      tools: [
        { type: 'function', name: 'a__b' },
        { type: 'namespace', name: 'a', tools: [{ type: 'function', name: 'b' }] },
      ],
    });
    expect(() => t.toChat(req)).toThrow(/two tools reach the backend as a__b/);
  });

  it('gives an OpenAI error body', () => {
    expect(t.errorBody(400, 'bad', 'input')).toEqual({
      error: { message: 'bad', type: 'invalid_request_error', param: 'input', code: null },
    });
    expect(t.errorBody(502, 'down')).toMatchObject({ error: { type: 'server_error', param: null } });
  });
});

const turns: Record<string, ScriptedTurn> = {
  text: { content: 'Hello, world! How are you?' },
  thinkingAndCalls: {
    reasoning: 'Call ls then cat.',
    content: 'On it.',
    toolCalls: [
      { id: 'call_1', name: 'ls', arguments: '{"path": "."}' },
      { id: 'call_2', name: 'cat', arguments: '{"path": "README.md"}' },
    ],
  },
  callOnly: { toolCalls: [{ id: 'call_3', name: 'ls', arguments: '{}' }] },
  thinkingOnly: { reasoning: 'Hmm.', content: '' },
  truncated: { content: 'cut sh', finish: 'length' },
};

describe('chat response → Response', () => {
  const req = t.parse({ model: 'qwen3', input: 'hi' });

  it('returns reasoning, message and function_call output items with usage', () => {
    const r = t.fromChat(chatResponseFor(turns.thinkingAndCalls), req) as any;
    expect(r).toMatchObject({
      object: 'response',
      status: 'completed',
      model: 'qwen3',
      usage: { input_tokens: 11, output_tokens: 7, total_tokens: 18 },
    });
    expect(r.id).toMatch(/^resp_/);
    expect(r.output.map((o: any) => o.type)).toEqual([
      'reasoning',
      'message',
      'function_call',
      'function_call',
    ]);
    expect(r.output[0].content).toEqual([{ type: 'reasoning_text', text: 'Call ls then cat.' }]);
    expect(r.output[1].content[0]).toMatchObject({ type: 'output_text', text: 'On it.' });
    expect(r.output[2]).toMatchObject({ call_id: 'call_1', name: 'ls', arguments: '{"path": "."}' });
    expect(JSON.stringify(r)).not.toMatch(/token_ids|"logprob"/);
  });

  it('marks a max-token stop as incomplete', () => {
    expect(t.fromChat(chatResponseFor(turns.truncated), req)).toMatchObject({
      status: 'incomplete',
      incomplete_details: { reason: 'max_output_tokens' },
    });
  });
});

describe('streaming Responses', () => {
  const req = t.parse({ model: 'qwen3', input: 'hi', stream: true });

  for (const [name, turn] of Object.entries(turns)) {
    it(`events of a "${name}" turn accumulate (with the SDK's accumulator) to the non-streaming response`, () => {
      const ws = t.stream(req);
      const frames = [...chatChunksFor(turn).flatMap((c) => ws.chunk(c)), ...ws.end()];
      const events = parseSse(frames.join(''));
      for (const e of events) expect(e.event).toBe(e.data.type);
      const seqs = events.map((e) => e.data.sequence_number);
      expect(seqs).toEqual(seqs.map((_, i) => i));
      let snapshot: Response | undefined;
      for (const e of events.slice(0, -1))
        snapshot = accumulateResponse(e.data as ResponseStreamEvent, snapshot);
      const expected = t.fromChat(chatResponseFor(turn), req) as any;
      const last = events.at(-1)!.data;
      expect(last.type).toBe(expected.status === 'completed' ? 'response.completed' : 'response.incomplete');
      expect(last.response).toEqual(expected);
      expect(ws.assembled()).toEqual(expected);
      // the incremental events alone rebuild the same output items
      expect(JSON.parse(JSON.stringify(snapshot!.output))).toEqual(expected.output);
      expect(events.slice(0, 2).map((e) => e.data.type)).toEqual([
        'response.created',
        'response.in_progress',
      ]);
      expect(frames.join('')).not.toMatch(/token_ids|\[DONE\]/);
    });
  }

  it('any turn in any fragment size streams to exactly the non-streaming response', () => {
    const turn = fc.record(
      {
        reasoning: fc.string({ maxLength: 20 }),
        content: fc.string({ maxLength: 30 }),
        toolCalls: fc.uniqueArray(
          fc.record({
            id: fc.constantFrom('c1', 'c2', 'c3'),
            name: fc.constantFrom('ls', 'cat'),
            arguments: fc.dictionary(fc.string({ maxLength: 4 }), fc.integer()).map((d) => JSON.stringify(d)),
          }),
          { maxLength: 3, selector: (c) => c.id },
        ),
        finish: fc.constantFrom('stop' as const, 'length' as const, 'tool_calls' as const),
      },
      { requiredKeys: [] },
    );
    fc.assert(
      fc.property(turn, fc.integer({ min: 1, max: 7 }), (tn, size) => {
        const ws = t.stream(req);
        const frames = [...chatChunksFor(tn, 'm', size).flatMap((c) => ws.chunk(c)), ...ws.end()];
        const events = parseSse(frames.join(''));
        let snapshot: Response | undefined;
        for (const e of events.slice(0, -1))
          snapshot = accumulateResponse(e.data as ResponseStreamEvent, snapshot);
        const expected = t.fromChat(chatResponseFor(tn), req) as any;
        expect(events.at(-1)?.data.response).toEqual(expected);
        expect(JSON.parse(JSON.stringify(snapshot?.output))).toEqual(expected.output);
      }),
      { numRuns: 200 },
    );
  });

  it('a call of a namespaced tool comes back with its namespace, streamed and not', () => {
    const nsReq = t.parse({
      model: 'm',
      input: 'x',
      stream: true,
      tools: [
        { type: 'namespace', name: 'multi_agent_v1', tools: [{ type: 'function', name: 'spawn_agent' }] },
        { type: 'function', name: 'shell' },
      ],
    });
    const turn: ScriptedTurn = {
      toolCalls: [
        { id: 'c1', name: 'multi_agent_v1__spawn_agent', arguments: '{"task":"x"}' },
        { id: 'c2', name: 'shell', arguments: '{}' },
      ],
    };
    const plain = t.fromChat(chatResponseFor(turn), nsReq) as any;
    expect(plain.output[0]).toMatchObject({
      name: 'spawn_agent',
      namespace: 'multi_agent_v1',
      call_id: 'c1',
    });
    expect(plain.output[1]).toMatchObject({ name: 'shell', call_id: 'c2' });
    expect(plain.output[1]).not.toHaveProperty('namespace');
    const ws = t.stream(nsReq);
    const frames = [...chatChunksFor(turn).flatMap((c) => ws.chunk(c)), ...ws.end()];
    const events = parseSse(frames.join(''));
    const added = events.filter((e) => e.event === 'response.output_item.added').map((e) => e.data.item);
    expect(added[0]).toMatchObject({ name: 'spawn_agent', namespace: 'multi_agent_v1' });
    const done = events.find((e) => e.event === 'response.function_call_arguments.done');
    expect(done?.data.name).toBe('spawn_agent');
    expect(events.at(-1)?.data.response).toEqual(plain);
  });

  it('orders text events as added → part added → deltas → done → part done → item done', () => {
    const ws = t.stream(req);
    const frames = [...chatChunksFor({ content: 'abcdef' }).flatMap((c) => ws.chunk(c)), ...ws.end()];
    expect(parseSse(frames.join('')).map((e) => e.data.type)).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
      'response.output_text.delta',
      'response.output_text.delta',
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.completed',
    ]);
  });

  it('reports a mid-stream failure as an error event', () => {
    const ws = t.stream(req);
    ws.chunk(chatChunksFor(turns.text)[0]);
    const [e] = parseSse(ws.error('backend went away').join(''));
    expect(e).toEqual({
      event: 'error',
      data: {
        type: 'error',
        sequence_number: 2,
        code: 'server_error',
        message: 'backend went away',
        param: null,
      },
    });
  });
});
