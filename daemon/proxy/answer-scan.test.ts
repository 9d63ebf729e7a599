// parseChatAnswer reads what JSON.parse reads, whatever the strings hold (quotes, escapes, `]}`, the
// key it looks for), with each choice's logprob entries as `{logprob}` when they have vLLM's shape
// and as JSON.parse makes them otherwise; the token fields of the record are the same either way.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseChatAnswer, parseWithoutPromptIds } from './answer-scan';
import type { Json } from './json';
import { tokensOf } from './record-fields';

const tricky = fc.oneof(
  fc.string({ unit: 'binary' }),
  fc.constantFrom(
    '',
    ']}',
    '"logprobs":{"content":[',
    '"prompt_token_ids":[1]',
    '\\',
    '"',
    '}]},"finish_reason"',
    '\u2028',
    '\u0000',
  ),
);

const entry = (topLogprobs: boolean) =>
  fc.record({
    token: tricky,
    logprob: fc.oneof(fc.double({ noNaN: true, noDefaultInfinity: true }), fc.constantFrom(-0, -9999.0, 0)),
    bytes: fc.array(fc.integer({ min: 0, max: 255 }), { maxLength: 4 }),
    top_logprobs: topLogprobs
      ? fc.array(fc.record({ token: fc.string(), logprob: fc.double({ noNaN: true }) }), {
          minLength: 1,
          maxLength: 2,
        })
      : fc.constant([]),
  });

const choice = (i: number) =>
  fc.record({
    index: fc.constant(i),
    message: fc.record({ role: fc.constant('assistant'), content: tricky }),
    logprobs: fc.oneof(
      fc.constant(null),
      fc.record({ content: fc.array(entry(false), { maxLength: 12 }) }),
      fc.record({ content: fc.array(entry(true), { minLength: 1, maxLength: 3 }) }),
    ),
    finish_reason: fc.constantFrom('stop', 'length', null),
    stop_reason: fc.constant(null),
    token_ids: fc.array(fc.nat(200_000), { maxLength: 12 }),
  });

const answer = fc.integer({ min: 1, max: 3 }).chain((n) =>
  fc.record({
    id: tricky,
    object: fc.constant('chat.completion'),
    created: fc.nat(),
    model: tricky,
    choices: fc.tuple(...Array.from({ length: n }, (_, i) => choice(i))),
    usage: fc.record({ prompt_tokens: fc.nat(), completion_tokens: fc.nat(), total_tokens: fc.nat() }),
    prompt_token_ids: fc.array(fc.nat(200_000), { maxLength: 12 }),
  }),
);

/** `json` with every choice's logprob entries cut to their logprob. */
function logprobsOnly(json: Json): Json {
  const copy = structuredClone(json);
  for (const c of copy.choices ?? [])
    if (Array.isArray(c?.logprobs?.content))
      c.logprobs.content = c.logprobs.content.map((e: Json) => ({ logprob: e.logprob }));
  return copy;
}

describe('parseChatAnswer', () => {
  it('reads what JSON.parse reads, entries cut to their logprob, in any formatting', () => {
    fc.assert(
      fc.property(answer, fc.constantFrom(0, 0, 0, 1), (a, indent) => {
        const text = JSON.stringify(a, null, indent);
        const expected = JSON.parse(text);
        const got = parseChatAnswer(text, 0) as Json;
        expect(logprobsOnly(got)).toEqual(logprobsOnly(expected));
        for (let i = 0; i < a.choices.length; i++)
          expect(tokensOf(got, 'chat', i)).toEqual(tokensOf(expected, 'chat', i));
      }),
      { numRuns: 400 },
    );
  });

  it('makes no entry object of vLLM-shaped entries, even when their strings hold the key it looks for', () => {
    const text = JSON.stringify({
      id: 'x',
      object: 'chat.completion',
      choices: [
        {
          index: 0,
          message: { role: 'assistant', content: '"logprobs":{"content":[ ]} \\' },
          logprobs: {
            content: [
              { token: ']}', logprob: -0.5, bytes: [93, 125], top_logprobs: [] },
              { token: '"logprobs":{"content":[', logprob: -1e-7, bytes: [], top_logprobs: [] },
            ],
          },
          finish_reason: 'stop',
          token_ids: [1, 2],
        },
      ],
    });
    const got = parseChatAnswer(text, 0) as Json;
    expect(got.choices[0].logprobs.content).toEqual([{ logprob: -0.5 }, { logprob: -1e-7 }]);
    expect(got.choices[0].message.content).toBe('"logprobs":{"content":[ ]} \\');
  });

  it('reads numbers as JSON.parse does (vLLM writes -0.0 and exponents) and refuses what JSON.parse refuses', () => {
    const lp = (list: string) =>
      `{"choices":[{"index":0,"logprobs":{"content":[${list}]},"finish_reason":"stop","token_ids":[7]}]}`;
    const e = (n: string) => `{"token":"a","logprob":${n},"bytes":[97],"top_logprobs":[]}`;
    const got = parseChatAnswer(lp([e('-0.0'), e('-1.5E-7'), e('-9999.0'), e('0')].join(',')), 0) as Json;
    const values = got.choices[0].logprobs.content.map((x: Json) => x.logprob);
    expect(values).toEqual([-0, -1.5e-7, -9999, 0]);
    expect(Object.is(values[0], -0)).toBe(true);
    for (const bad of [`${e('-1')},,${e('-2')}`, `${e('-1')}x${e('-2')}`, `${e('-1')},`, e('-01')])
      expect(parseChatAnswer(lp(bad), 0), bad).toBeNull();
    const spaced = lp(`${e('-1')}, ${e('-2')}`);
    expect(parseChatAnswer(spaced, 0)).toEqual(JSON.parse(spaced));
  });

  it('parses the whole text when a content list stands anywhere but in a choice, and gives null for non-JSON', () => {
    const elsewhere = '{"choices":[],"extra":{"logprobs":{"content":[]}}}';
    expect(parseChatAnswer(elsewhere, 0)).toEqual(JSON.parse(elsewhere));
    expect(parseChatAnswer('{"choices":[{"logprobs":{"content":[]}}', 0)).toBeNull();
    expect(parseChatAnswer('not json', 0)).toBeNull();
  });

  it('parses an answer of few tokens whole and scans a long one, or a short one its entries fill', () => {
    const answerOf = (tokens: number, prompt = 9) =>
      JSON.stringify({
        choices: [
          {
            index: 0,
            message: { role: 'assistant', content: 'ab'.repeat(tokens) },
            logprobs: {
              content: Array.from({ length: tokens }, (_, i) => ({
                token: 'ab',
                logprob: -(i + 1) / 8,
                bytes: [97, 98],
                top_logprobs: [],
              })),
            },
            finish_reason: 'length',
            token_ids: Array.from({ length: tokens }, (_, i) => 300 + i),
          },
        ],
        usage: { prompt_tokens: 9, total_tokens: 9 + tokens, completion_tokens: tokens },
        prompt_token_ids: Array.from({ length: prompt }, (_, i) => i),
      });
    const short = answerOf(4);
    expect(parseChatAnswer(short)).toEqual(JSON.parse(short));
    // 17 entries are most of a small call's text; beside 2,000 echoed prompt ids they are not
    const small = answerOf(17);
    expect((parseChatAnswer(small) as Json).choices[0].logprobs.content).toEqual(
      Array.from({ length: 17 }, (_, i) => ({ logprob: -(i + 1) / 8 })),
    );
    expect(logprobsOnly(parseChatAnswer(small) as Json)).toEqual(logprobsOnly(JSON.parse(small)));
    const echoed = answerOf(17, 2000);
    expect(parseChatAnswer(echoed)).toEqual(JSON.parse(echoed));
    const long = answerOf(200);
    const got = parseChatAnswer(long) as Json;
    expect(got.choices[0].logprobs.content).toEqual(
      Array.from({ length: 200 }, (_, i) => ({ logprob: -(i + 1) / 8 })),
    );
    expect(logprobsOnly(got)).toEqual(logprobsOnly(JSON.parse(long)));
  });
});

/** A vLLM /v1/completions answer (the bridge's backend): prompt ids per choice, maybe also at the top. */
const completion = fc.record({
  id: tricky,
  object: fc.constant('text_completion'),
  model: tricky,
  choices: fc.array(
    fc.record({
      index: fc.nat(3),
      text: tricky,
      logprobs: fc.record({ token_logprobs: fc.array(fc.double({ noNaN: true, noDefaultInfinity: true })) }),
      finish_reason: fc.constantFrom('stop', 'length'),
      prompt_token_ids: fc.oneof(fc.array(fc.nat(200_000), { maxLength: 20 }), fc.constant(null)),
      token_ids: fc.array(fc.nat(200_000), { maxLength: 8 }),
    }),
    { maxLength: 2 },
  ),
  prompt_token_ids: fc.option(fc.array(fc.nat(200_000), { maxLength: 5 }), { nil: undefined }),
});

/** `json` with every prompt_token_ids list null. */
function withoutPromptIds(json: Json): Json {
  const copy = structuredClone(json);
  if (Array.isArray(copy.prompt_token_ids)) copy.prompt_token_ids = null;
  for (const c of copy.choices ?? []) if (Array.isArray(c.prompt_token_ids)) c.prompt_token_ids = null;
  return copy;
}

describe('parseWithoutPromptIds', () => {
  it('reads what JSON.parse reads, with the prompt id lists null, whatever the strings hold', () => {
    fc.assert(
      fc.property(completion, (a) => {
        const text = JSON.stringify(a);
        expect(parseWithoutPromptIds(text)).toEqual(withoutPromptIds(JSON.parse(text)));
        // Formatted otherwise the lists are not found, and the text is parsed whole.
        const spaced = JSON.stringify(a, null, 1);
        expect(parseWithoutPromptIds(spaced)).toEqual(JSON.parse(spaced));
      }),
      { numRuns: 400 },
    );
  });

  it('parses the whole text when a list holds a `]`, and gives null for non-JSON', () => {
    const odd = '{"prompt_token_ids":["a]",1],"choices":[]}';
    expect(parseWithoutPromptIds(odd)).toEqual(JSON.parse(odd));
    expect(parseWithoutPromptIds('{"prompt_token_ids":[1,2')).toBeNull();
    expect(parseWithoutPromptIds('{"choices":[}')).toBeNull();
  });
});
