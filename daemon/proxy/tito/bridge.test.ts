// The bridge against the REAL Qwen3 tokenizer and chat template: conversations whose naive re-rendering
// provably breaks the token prefix, and the cases where the bridge must refuse.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { localQwen3Tokenizer, qwen3ChatTemplate } from '../../tokenize/qwen3';
import { type PreviousCall, planBridge, sameJson } from './bridge';
import type { ChatMessageLike, ChatToolLike } from './tokenizer';

const tok = localQwen3Tokenizer();
const IM_END = 151645;

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

const startsWith = (a: number[], prefix: number[]) =>
  a.length >= prefix.length && prefix.every((t, i) => a[i] === t);

/** A previous call as the proxy records it: the rendered prompt, the sampled ids, the parsed message. */
async function sampled(
  messages: ChatMessageLike[],
  responseIds: number[],
  assistant: ChatMessageLike,
  withTools = true,
): Promise<PreviousCall> {
  return {
    messages,
    tools: withTools ? tools : undefined,
    prompt_ids: await tok.render(messages, withTools ? tools : undefined, true),
    response_ids: responseIds,
    assistant_message: assistant,
  };
}

const history: ChatMessageLike[] = [
  { role: 'system', content: 'You are a helpful agent.' },
  { role: 'user', content: 'What does a.txt say?' },
];

describe('bridge on Qwen3 conversations that naive re-rendering breaks', () => {
  it('thinking stripped from an earlier turn: naive prompt is not an extension, the bridge prompt is', async () => {
    const sampledText =
      '<think>\nThe user greets me; answer briefly.\n</think>\n\nHello! How can I help?<|im_end|>';
    const prev = await sampled(
      [{ role: 'user', content: 'hi' }],
      tok.encode(sampledText) as number[],
      {
        role: 'assistant',
        content: 'Hello! How can I help?',
        reasoning_content: 'The user greets me; answer briefly.',
      },
      false,
    );
    const request = {
      messages: [
        { role: 'user', content: 'hi' },
        { role: 'assistant', content: 'Hello! How can I help?' }, // harness drops reasoning, as most do
        { role: 'user', content: 'Tell me a joke.' },
      ],
    };
    const sequence = [...prev.prompt_ids, ...prev.response_ids];
    const naive = await tok.render(request.messages, undefined, true);
    expect(startsWith(naive, sequence)).toBe(false);
    expect(await tok.decode(naive)).not.toContain('<think>');

    const plan = await planBridge({ previous: prev, request, tokenizer: tok });
    expect(plan).toMatchObject({ ok: true, reused_tokens: sequence.length });
    if (!plan.ok) return;
    expect(startsWith(plan.prompt_ids, sequence)).toBe(true);
    const tail = await tok.decode(plan.prompt_ids.slice(sequence.length));
    expect(tail).toBe('\n<|im_start|>user\nTell me a joke.<|im_end|>\n<|im_start|>assistant\n');
    // the tail is exactly what the backend's own rendering ends with
    expect(naive.slice(naive.length - (plan.prompt_ids.length - sequence.length))).toEqual(
      plan.prompt_ids.slice(sequence.length),
    );
  });

  it('tool-call JSON re-serialised with other whitespace: the bridge keeps the sampled JSON', async () => {
    // the model sampled compact JSON; the template re-renders arguments with `tojson` (", " and ": ")
    const sampledText =
      '<think>\nI need to read the file.\n</think>\n\n<tool_call>\n{"name":"read_file","arguments":{"path":"a.txt"}}\n</tool_call><|im_end|>';
    const assistant = {
      role: 'assistant',
      content: '',
      reasoning_content: 'I need to read the file.',
      tool_calls: [
        { id: 'call_1', type: 'function', function: { name: 'read_file', arguments: '{"path": "a.txt"}' } },
      ],
    };
    const prev = await sampled(history, tok.encode(sampledText) as number[], assistant);
    const request = {
      messages: [
        ...history,
        {
          role: 'assistant',
          content: null,
          reasoning_content: 'I need to read the file.', // kept, so only the JSON differs
          tool_calls: [
            {
              id: 'call_1',
              type: 'function',
              function: { name: 'read_file', arguments: '{"path":"a.txt"}' },
            },
          ],
        },
        { role: 'tool', tool_call_id: 'call_1', content: 'hello from a.txt' },
      ],
      tools,
    };
    const sequence = [...prev.prompt_ids, ...prev.response_ids];
    const naive = await tok.render(request.messages, tools, true);
    expect(startsWith(naive, sequence)).toBe(false);
    const naiveText = await tok.decode(naive);
    expect(naiveText).toContain('<think>\nI need to read the file.\n</think>\n\n<tool_call>');
    expect(naiveText).toContain('{"name": "read_file", "arguments": {"path": "a.txt"}}');

    const plan = await planBridge({ previous: prev, request, tokenizer: tok });
    expect(plan.ok).toBe(true);
    if (!plan.ok) return;
    expect(startsWith(plan.prompt_ids, sequence)).toBe(true);
    expect(await tok.decode(plan.prompt_ids.slice(sequence.length))).toBe(
      '\n<|im_start|>user\n<tool_response>\nhello from a.txt\n</tool_response><|im_end|>\n<|im_start|>assistant\n',
    );
  });

  it('a non-canonical BPE split the model sampled survives, where re-tokenizing merges it', async () => {
    const word = ' unbelievable';
    const canonical = tok.encode(word) as number[];
    const split = [...(tok.encode(' unbel') as number[]), ...(tok.encode('ievable') as number[])];
    expect(split).not.toEqual(canonical);
    expect(await tok.decode(split)).toBe(word);
    const responseIds = [
      ...(tok.encode('That is') as number[]),
      ...split,
      ...(tok.encode('.<|im_end|>') as number[]),
    ];
    const content = `That is${word}.`;
    const prev = await sampled(history, responseIds, { role: 'assistant', content }, false);
    const request = {
      messages: [...history, { role: 'assistant', content }, { role: 'user', content: 'Why?' }],
    };
    const sequence = [...prev.prompt_ids, ...prev.response_ids];
    const naive = await tok.render(request.messages, undefined, true);
    expect(startsWith(naive, sequence)).toBe(false);
    const plan = await planBridge({ previous: prev, request, tokenizer: tok });
    expect(plan.ok && startsWith(plan.prompt_ids, sequence)).toBe(true);
  });

  it('a sample cut by max_tokens gets the end-of-turn marker the template would have put', async () => {
    const responseIds = tok.encode('The file says hel') as number[];
    const prev = await sampled(
      history,
      responseIds,
      { role: 'assistant', content: 'The file says hel' },
      false,
    );
    const request = {
      messages: [
        ...history,
        { role: 'assistant', content: 'The file says hel' },
        { role: 'user', content: 'Go on.' },
      ],
    };
    const plan = await planBridge({ previous: prev, request, tokenizer: tok });
    expect(plan.ok).toBe(true);
    if (!plan.ok) return;
    const n = prev.prompt_ids.length + responseIds.length;
    expect(plan.prompt_ids[n]).toBe(IM_END);
    expect(plan.reused_tokens).toBe(n);
    expect(await tok.decode(plan.prompt_ids.slice(n))).toBe(
      '<|im_end|>\n<|im_start|>user\nGo on.<|im_end|>\n<|im_start|>assistant\n',
    );
  });

  it('chains: a third call bridges onto the second bridged prompt', async () => {
    const r1 = tok.encode('<think>\nok\n</think>\n\nFirst.<|im_end|>') as number[];
    const prev1 = await sampled(history, r1, { role: 'assistant', content: 'First.' }, false);
    const m2 = [...history, { role: 'assistant', content: 'First.' }, { role: 'user', content: 'More.' }];
    const p2 = await planBridge({ previous: prev1, request: { messages: m2 }, tokenizer: tok });
    if (!p2.ok) throw new Error(p2.reason);
    const r2 = tok.encode('<think>\nsure\n</think>\n\nSecond.<|im_end|>') as number[];
    const prev2: PreviousCall = {
      messages: m2,
      prompt_ids: p2.prompt_ids,
      response_ids: r2,
      assistant_message: { role: 'assistant', content: 'Second.' },
    };
    const m3 = [...m2, { role: 'assistant', content: 'Second.' }, { role: 'user', content: 'Thanks.' }];
    const p3 = await planBridge({ previous: prev2, request: { messages: m3 }, tokenizer: tok });
    expect(
      p3.ok &&
        startsWith(p3.prompt_ids, [
          ...prev1.prompt_ids,
          ...r1,
          ...p2.prompt_ids.slice(prev1.prompt_ids.length + r1.length),
          ...r2,
        ]),
    ).toBe(true);
  });
});

describe('bridge fallbacks give a reason', () => {
  const r = tok.encode('Fine.<|im_end|>') as number[];
  const base = async () => sampled(history, r, { role: 'assistant', content: 'Fine.' });
  const next = (extra: { tools?: ChatToolLike[] } = {}) => ({
    messages: [...history, { role: 'assistant', content: 'Fine.' }, { role: 'user', content: 'And?' }],
    tools,
    ...extra,
  });

  it('no previous call', async () => {
    expect(await planBridge({ previous: null, request: next(), tokenizer: tok })).toEqual({
      ok: false,
      reason: 'no previous call',
    });
  });

  it('tools changed', async () => {
    const plan = await planBridge({ previous: await base(), request: next({ tools: [] }), tokenizer: tok });
    expect(plan).toEqual({
      ok: false,
      reason: 'tools changed',
      change: { index: null, role: null, change: 'tools_changed', detail: 'tools changed' },
    });
  });

  it('history edited', async () => {
    const req = next();
    req.messages[1] = { role: 'user', content: 'What does b.txt say?' };
    const plan = await planBridge({ previous: await base(), request: req, tokenizer: tok });
    expect(plan).toMatchObject({ ok: false, reason: expect.stringMatching(/^history edited: message 1/) });
  });

  it('the fallback names the message that changed and how', async () => {
    const previous = await base();
    const edit = async (i: number, m: ChatMessageLike | null) => {
      const req = next();
      if (m) req.messages[i] = m;
      else req.messages.splice(i);
      const plan = await planBridge({ previous, request: req, tokenizer: tok });
      return plan.ok ? null : plan.change;
    };
    const user = history[1];
    expect(await edit(1, { ...user, content: ` ${user.content}\n` })).toMatchObject({
      index: 1,
      role: 'user',
      change: 'whitespace',
    });
    expect(await edit(1, { role: 'user', content: 'What does b.txt say?' })).toMatchObject({
      index: 1,
      role: 'user',
      change: 'content_edited',
      detail: expect.stringContaining('"What does b.txt say?"'),
    });
    expect(await edit(2, null)).toMatchObject({ index: 2, role: 'assistant', change: 'message_removed' });
    expect(await edit(1, { role: 'assistant', content: user.content })).toMatchObject({
      change: 'role_changed',
    });
  });

  it('the resent assistant message is not what the call returned', async () => {
    const req = next();
    req.messages[2] = { role: 'assistant', content: 'Fine, thanks.' };
    const plan = await planBridge({ previous: await base(), request: req, tokenizer: tok });
    expect(plan).toMatchObject({ ok: false, reason: expect.stringMatching(/not the previous response/) });
  });

  it('tool call arguments compare as parsed JSON, so a different value is refused', async () => {
    const call = (args: string) => ({
      role: 'assistant',
      content: '',
      tool_calls: [{ id: 'c', type: 'function', function: { name: 'read_file', arguments: args } }],
    });
    const prev = await sampled(history, r, call('{"path": "a.txt"}'));
    const same = await planBridge({
      previous: prev,
      request: {
        messages: [...history, call('{ "path":"a.txt" }'), { role: 'tool', tool_call_id: 'c', content: 'x' }],
        tools,
      },
      tokenizer: tok,
    });
    expect(same.ok).toBe(true);
    const other = await planBridge({
      previous: prev,
      request: {
        messages: [...history, call('{"path": "b.txt"}'), { role: 'tool', tool_call_id: 'c', content: 'x' }],
        tools,
      },
      tokenizer: tok,
    });
    expect(other).toMatchObject({ ok: false, reason: expect.stringMatching(/tool calls differ/) });
  });

  it('no new messages', async () => {
    const req = next();
    req.messages.pop();
    expect(await planBridge({ previous: await base(), request: req, tokenizer: tok })).toMatchObject({
      ok: false,
      reason: expect.stringMatching(/no new messages/),
    });
  });

  it('template suffix mismatch when the tail rendering depends on the earlier assistant turn', async () => {
    // a template variant that names the previous call inside the tool response
    const variant = qwen3ChatTemplate.replace(
      "{{- '\\n<tool_response>\\n' }}",
      "{{- '\\n<tool_response for=\"' + (messages[loop.index0 - 1].tool_calls[0].function.name if messages[loop.index0 - 1].tool_calls else 'none') + '\">\\n' }}",
    );
    expect(variant).not.toBe(qwen3ChatTemplate);
    const vt = localQwen3Tokenizer({ chatTemplate: variant });
    const call = {
      role: 'assistant',
      content: '',
      tool_calls: [
        { id: 'c', type: 'function', function: { name: 'read_file', arguments: '{"path": "a.txt"}' } },
      ],
    };
    const prev: PreviousCall = {
      messages: history,
      tools,
      prompt_ids: await vt.render(history, tools, true),
      response_ids: r,
      assistant_message: call,
    };
    const plan = await planBridge({
      previous: prev,
      request: { messages: [...history, call, { role: 'tool', tool_call_id: 'c', content: 'x' }], tools },
      tokenizer: vt,
    });
    expect(plan).toMatchObject({ ok: false, reason: expect.stringMatching(/^template suffix mismatch/) });
  });

  it('says when the generation prompt opens a think block (thinking-only templates)', async () => {
    const opening = qwen3ChatTemplate.replace(
      "{{- '<|im_start|>assistant\\n' }}",
      "{{- '<|im_start|>assistant\\n<think>\\n' }}",
    );
    expect(opening).not.toBe(qwen3ChatTemplate);
    const ot = localQwen3Tokenizer({ chatTemplate: opening });
    const prev: PreviousCall = {
      messages: history,
      prompt_ids: await ot.render(history, undefined, true),
      response_ids: r,
      assistant_message: { role: 'assistant', content: 'Fine.' },
    };
    const request = {
      messages: [...history, { role: 'assistant', content: 'Fine.' }, { role: 'user', content: 'And?' }],
    };
    expect(await planBridge({ previous: prev, request, tokenizer: ot })).toMatchObject({
      ok: true,
      thinking: true,
    });
    expect(
      await planBridge({
        previous: { ...prev, prompt_ids: await tok.render(history, undefined, true) },
        request,
        tokenizer: tok,
      }),
    ).toMatchObject({ ok: true, thinking: false });
  });
});

describe('bridge on random honest continuations (real Qwen3 tokenizer)', () => {
  const text = fc.string({ unit: 'grapheme', maxLength: 12 });
  const args = fc.dictionary(
    fc.string({ maxLength: 3 }),
    fc.oneof(fc.integer(), fc.string({ unit: 'grapheme', maxLength: 4 })),
    {
      maxKeys: 2,
    },
  );
  const scenario = fc.record({
    user: text,
    thinking: fc.option(text, { nil: undefined }),
    content: text,
    calls: fc.array(fc.record({ name: fc.constantFrom('read_file', 'ls'), args }), { maxLength: 2 }),
    next: fc.array(fc.record({ role: fc.constantFrom('user', 'tool'), content: text }), {
      minLength: 1,
      maxLength: 3,
    }),
    withTools: fc.boolean(),
  });

  it('always bridges, extends the sampled sequence, and ends exactly like the plain rendering', async () => {
    await fc.assert(
      fc.asyncProperty(scenario, async (sc) => {
        const toolsOrNone = sc.withTools ? tools : undefined;
        const messages: ChatMessageLike[] = [{ role: 'user', content: sc.user }];
        const calls = sc.calls.map((c, i) => ({
          id: `c${i}`,
          type: 'function',
          function: { name: c.name, arguments: JSON.stringify(c.args) },
        }));
        // what the model sampled: think block, text, Hermes tool calls in compact JSON, <|im_end|>
        const sampledText =
          (sc.thinking !== undefined ? `<think>\n${sc.thinking}\n</think>\n\n` : '') +
          sc.content +
          calls
            .map(
              (c) =>
                `\n<tool_call>\n{"name":"${c.function.name}","arguments":${c.function.arguments}}\n</tool_call>`,
            )
            .join('') +
          '<|im_end|>';
        const prev: PreviousCall = {
          messages,
          tools: toolsOrNone,
          prompt_ids: await tok.render(messages, toolsOrNone, true),
          response_ids: tok.encode(sampledText) as number[],
          assistant_message: {
            role: 'assistant',
            content: sc.content,
            ...(sc.thinking !== undefined ? { reasoning_content: sc.thinking } : {}),
            ...(calls.length ? { tool_calls: calls } : {}),
          },
        };
        const resent = {
          role: 'assistant',
          content: sc.content,
          // the harness re-serialises arguments its own way
          ...(calls.length
            ? {
                tool_calls: calls.map((c) => ({
                  ...c,
                  function: {
                    ...c.function,
                    arguments: JSON.stringify(JSON.parse(c.function.arguments), null, 2),
                  },
                })),
              }
            : {}),
        };
        const next = sc.next.map((m, i) => (m.role === 'tool' ? { ...m, tool_call_id: `c${i}` } : m));
        const request = { messages: [...messages, resent, ...next], tools: toolsOrNone };
        const plan = await planBridge({ previous: prev, request, tokenizer: tok });
        if (!plan.ok) throw new Error(plan.reason);
        const sequence = [...prev.prompt_ids, ...prev.response_ids];
        expect(plan.prompt_ids.slice(0, sequence.length)).toEqual(sequence);
        const tail = plan.prompt_ids.slice(sequence.length);
        const naive = await tok.render(request.messages, toolsOrNone, true);
        expect(naive.slice(naive.length - tail.length)).toEqual(tail);
        expect(await tok.decode(tail)).toMatch(
          /^\n<\|im_start\|>(user|system)[\s\S]*<\|im_start\|>assistant\n$/,
        );
      }),
      { numRuns: 60 },
    );
  });

  it('refuses a request that contains the sentinel text rather than mis-cutting it', async () => {
    const r = tok.encode('Fine.<|im_end|>') as number[];
    const prev = await sampled(history, r, { role: 'assistant', content: 'Fine.' }, false);
    const plan = await planBridge({
      previous: prev,
      request: {
        messages: [
          ...history,
          { role: 'assistant', content: 'Fine.' },
          { role: 'user', content: 'say TITO_SENTINEL_8c1f2e' },
        ],
      },
      tokenizer: tok,
    });
    expect(plan).toEqual({ ok: false, reason: 'the request contains the bridge sentinel text' });
  });
});

describe('sameJson (history comparison)', () => {
  /** The comparison it replaced: JSON with sorted keys, undefined-valued keys dropped. */
  const sortedJson = (v: unknown): string =>
    JSON.stringify(v, (_k, x) =>
      x && typeof x === 'object' && !Array.isArray(x)
        ? Object.fromEntries(
            Object.keys(x)
              .sort()
              .filter((k) => x[k] !== undefined)
              .map((k) => [k, x[k]]),
          )
        : x,
    );
  /** `v` with every object's keys in reverse order. */
  const reordered = (v: unknown): unknown =>
    Array.isArray(v)
      ? v.map(reordered)
      : v && typeof v === 'object'
        ? Object.fromEntries(
            Object.entries(v)
              .reverse()
              .map(([k, x]) => [k, reordered(x)]),
          )
        : v;

  it('agrees with comparing sorted-key JSON, for any two values and for a value and its reordering', () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.jsonValue(), (a, b) => {
        expect(sameJson(a, b)).toBe(sortedJson(a) === sortedJson(b));
        expect(sameJson(a, reordered(a))).toBe(true);
      }),
      { numRuns: 500 },
    );
  });

  it('tells apart values that differ in one place, and ignores undefined-valued keys', () => {
    fc.assert(
      fc.property(fc.dictionary(fc.string(), fc.jsonValue(), { minKeys: 1 }), (o) => {
        const key = Object.keys(o)[0];
        expect(sameJson(o, { ...o, [key]: [o[key]] })).toBe(false);
        expect(sameJson(o, { ...o, extra_key_: 1 })).toBe(key === 'extra_key_' && sortedJson(o[key]) === '1');
        expect(sameJson({ ...o, gone: undefined }, o)).toBe(!('gone' in o) || o.gone === undefined);
      }),
    );
  });
});
