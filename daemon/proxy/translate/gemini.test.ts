import { describe, expect, it } from 'vitest';
import { ZodError } from 'zod';
import { geminiTranslator as t } from './gemini';
import { chatChunksFor, chatResponseFor, parseSse, type ScriptedTurn } from './test-kit';

const base = { model: 'qwen3', stream: false };

describe('Gemini generateContent → chat request', () => {
  it('maps the system instruction, turns, function calls and their responses, tools and settings', () => {
    const req = t.parse({
      ...base,
      systemInstruction: { parts: [{ text: 'You are Gemini CLI.' }] },
      contents: [
        { role: 'user', parts: [{ text: 'context. ' }, { text: 'List files' }] },
        {
          role: 'model',
          parts: [
            { text: 'Thinking', thought: true },
            { text: 'Listing' },
            { text: '.' },
            { functionCall: { name: 'ls', args: { path: '.' } } },
            { functionCall: { id: 'c9', name: 'cat', args: { path: 'a' } } },
          ],
        },
        {
          role: 'user',
          parts: [
            { functionResponse: { id: 'c9', name: 'cat', response: { output: 'A' } } },
            { functionResponse: { name: 'ls', response: { output: 'a b' } } },
          ],
        },
      ],
      tools: [
        {
          functionDeclarations: [
            {
              name: 'ls',
              description: 'List',
              parameters: { type: 'OBJECT', properties: { path: { type: 'STRING' } }, required: ['path'] },
            },
            {
              name: 'cat',
              parametersJsonSchema: { type: 'object', properties: { path: { type: 'string' } } },
            },
          ],
        },
        { googleSearch: {} },
      ],
      toolConfig: { functionCallingConfig: { mode: 'ANY', allowedFunctionNames: ['ls'] } },
      generationConfig: {
        temperature: 0.5,
        topP: 0.9,
        topK: 20,
        maxOutputTokens: 64,
        stopSequences: ['END'],
        thinkingConfig: { includeThoughts: true, thinkingBudget: 0 },
      },
    });
    const chat = t.toChat(req);
    expect(chat.messages).toEqual([
      { role: 'system', content: 'You are Gemini CLI.' },
      { role: 'user', content: 'context. List files' },
      {
        role: 'assistant',
        content: 'Listing.',
        reasoning_content: 'Thinking',
        tool_calls: [
          { id: 'call_1_0', type: 'function', function: { name: 'ls', arguments: '{"path":"."}' } },
          { id: 'c9', type: 'function', function: { name: 'cat', arguments: '{"path":"a"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'c9', content: 'A' },
      { role: 'tool', tool_call_id: 'call_1_0', content: 'a b' },
    ]);
    expect(chat.tools).toEqual([
      {
        type: 'function',
        function: {
          name: 'ls',
          description: 'List',
          parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
        },
      },
      {
        type: 'function',
        function: { name: 'cat', parameters: { type: 'object', properties: { path: { type: 'string' } } } },
      },
    ]);
    expect(chat).toMatchObject({
      tool_choice: { type: 'function', function: { name: 'ls' } },
      temperature: 0.5,
      top_p: 0.9,
      top_k: 20,
      max_tokens: 64,
      stop: ['END'],
      chat_template_kwargs: { enable_thinking: false },
    });
    expect(chat.stream).toBeUndefined();
    expect(t.leftOut?.(req)).toEqual([
      { path: 'tools[1].googleSearch', tool: 'googleSearch', reason: expect.stringMatching(/hosted tool/) },
    ]);
  });

  it('refuses media parts naming the field', () => {
    let err: unknown;
    try {
      t.parse({
        ...base,
        contents: [{ role: 'user', parts: [{ inlineData: { mimeType: 'image/png', data: '' } }] }],
      });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ZodError);
    expect((err as ZodError).issues[0].path).toEqual(['contents', 0, 'parts', 0, 'inlineData']);
  });

  it('gives a Google error body', () => {
    expect(t.errorBody(400, 'bad', 'contents')).toEqual({
      error: { code: 400, message: 'contents: bad', status: 'INVALID_ARGUMENT' },
    });
    expect(t.errorBody(401, 'no key')).toMatchObject({ error: { status: 'UNAUTHENTICATED' } });
  });
});

const turns: Record<string, ScriptedTurn> = {
  text: { content: 'Hello there, world.' },
  thinking: { reasoning: 'Let me see.', content: 'Done.' },
  'two calls': {
    content: 'Looking.',
    toolCalls: [
      { id: 'c1', name: 'ls', arguments: '{"path":"."}' },
      { id: 'c2', name: 'cat', arguments: '{"path":"README.md"}' },
    ],
  },
  'cut by max tokens': { content: 'A long answ', finish: 'length' },
};

describe('chat → Gemini, streamed and not', () => {
  const req = t.parse({ ...base, stream: true, contents: [{ role: 'user', parts: [{ text: 'hi' }] }] });

  it('answers with one candidate, its parts, finishReason and usageMetadata', () => {
    const r = t.fromChat(chatResponseFor(turns['two calls']), req) as any;
    expect(r.candidates).toEqual([
      {
        content: {
          role: 'model',
          parts: [
            { text: 'Looking.' },
            { functionCall: { id: 'c1', name: 'ls', args: { path: '.' } } },
            { functionCall: { id: 'c2', name: 'cat', args: { path: 'README.md' } } },
          ],
        },
        finishReason: 'STOP',
        index: 0,
      },
    ]);
    expect(r.usageMetadata).toEqual({ promptTokenCount: 11, candidatesTokenCount: 7, totalTokenCount: 18 });
    expect(
      (t.fromChat(chatResponseFor(turns['cut by max tokens']), req) as any).candidates[0].finishReason,
    ).toBe('MAX_TOKENS');
  });

  for (const [name, turn] of Object.entries(turns))
    it(`the chunks of a "${name}" turn add up to the non-streaming response, which is what is recorded`, () => {
      const ws = t.stream(req);
      const frames = [...chatChunksFor(turn).flatMap((c) => ws.chunk(c)), ...ws.end()];
      const events = parseSse(frames.join('')).map((e) => e.data);
      for (const e of events) expect(e.candidates).toHaveLength(1);
      // what a client builds: text and thought parts joined, calls whole, the last chunk's finish and usage
      const parts = events.flatMap((e) => e.candidates[0].content.parts);
      const joined = (thought: boolean) =>
        parts
          .filter((p: any) => typeof p.text === 'string' && !!p.thought === thought)
          .map((p: any) => p.text)
          .join('');
      const expected = t.fromChat(chatResponseFor(turn), req) as any;
      const last = events.at(-1);
      expect(last.candidates[0].finishReason).toBe(expected.candidates[0].finishReason);
      expect(last.usageMetadata).toEqual(expected.usageMetadata);
      expect(joined(true)).toBe(turn.reasoning ?? '');
      expect(joined(false)).toBe(turn.content ?? '');
      expect(parts.filter((p: any) => p.functionCall)).toEqual(
        expected.candidates[0].content.parts.filter((p: any) => p.functionCall),
      );
      expect(ws.assembled()).toEqual({ ...expected, responseId: expect.any(String) });
      expect(frames.join('')).not.toMatch(/token_ids|\[DONE\]|event:/);
    });

  it('reports a mid-stream failure as a Google error frame', () => {
    const ws = t.stream(req);
    ws.chunk(chatChunksFor(turns.text)[1]);
    expect(parseSse(ws.error('backend went away').join(''))[0].data).toEqual({
      error: { code: 502, message: 'backend went away', status: 'INTERNAL' },
    });
  });
});
