// A stream relayed with the chunk scanner gives exactly what relaying every chunk through JSON.parse
// gives: the same frames to the harness byte for byte, the same record (token ids, logprobs, text,
// time to first token) and the same failures, whatever the strings contain and however the backend
// escapes them; a chunk the scanner does not know (or that is not JSON) takes the JSON.parse path.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ChatChunkScanner } from './chunk-scan';
import type { Json } from './json';
import { nativeOutput, type Output, translatedOutput } from './output';
import { tokensOf } from './record-fields';
import { StreamRelay } from './relay';
import { messagesTranslator } from './translate/messages';
import { responsesTranslator } from './translate/responses';

type Infer<A> = A extends fc.Arbitrary<infer T> ? T : never;

/** What the harness asked for: Chat Completions with or without vLLM's extras, or a translated wire. */
interface Harness {
  ids: boolean;
  logprobs: boolean;
  wire?: 'messages' | 'responses';
}

const outputFor = (h: Harness): Output => {
  if (h.wire === 'messages')
    return translatedOutput(
      messagesTranslator,
      messagesTranslator.parse({
        model: 'm',
        max_tokens: 100,
        stream: true,
        messages: [{ role: 'user', content: 'hi' }],
      }),
    );
  if (h.wire === 'responses')
    return translatedOutput(
      responsesTranslator,
      responsesTranslator.parse({ model: 'm', stream: true, input: 'hi' }),
    );
  return nativeOutput({ model: 'm', stream: true, return_token_ids: h.ids, logprobs: h.logprobs });
};

/** The same events through a relay with the scanner and one that parses every chunk. */
function relayBoth(events: string[], harness: Harness) {
  const run = (parsedOnly: boolean) => {
    const output = outputFor(harness);
    const open = output.open();
    let at = 0;
    const relay = new StreamRelay({
      kind: 'chat',
      out: open,
      scan: !parsedOnly,
      conv: null,
      logprobEntries: output.logprobEntries,
      backendName: 'b',
      elapsed: () => at,
    });
    const frames: string[] = [];
    let failure: string | null = null;
    for (; at < events.length; at++) {
      failure = relay.read(Buffer.from(`data: ${events[at]}\n\n`));
      frames.push(relay.take());
      if (failure !== null) break;
    }
    if (failure === null) {
      failure = relay.finish();
      frames.push(relay.take());
    }
    const json = relay.asm.result();
    const record = JSON.stringify({
      tokens: tokensOf(json, 'chat'),
      ttft: relay.ttft,
      chunks: relay.asm.chunks,
    });
    const response = JSON.stringify(open.assembled(relay.asm, json));
    return { frames, failure, record, response, scanned: relay.scanned };
  };
  return { fast: run(false), parsed: run(true) };
}

function expectSame(events: string[], harness: Harness) {
  const { fast, parsed } = relayBoth(events, harness);
  expect(parsed.scanned).toBe(0);
  expect(fast.frames).toEqual(parsed.frames);
  expect(fast.failure).toEqual(parsed.failure);
  expect(fast.record).toEqual(parsed.record);
  expect(fast.response).toEqual(parsed.response);
  return fast.scanned;
}

/** JSON text of `v` with strings escaped as vLLM (Python) might: some characters as \uXXXX or \/. */
function dumps(v: unknown, escapes: number[], numberText: (x: number) => string): string {
  let k = 0;
  const str = (s: string) => {
    let out = '"';
    for (const ch of s) {
      const mode = escapes.length ? escapes[k++ % escapes.length] : 0;
      if (mode === 1)
        for (let i = 0; i < ch.length; i++) out += `\\u${ch.charCodeAt(i).toString(16).padStart(4, '0')}`;
      else if (mode === 2 && ch === '/') out += '\\/';
      else out += JSON.stringify(ch).slice(1, -1);
    }
    return `${out}"`;
  };
  // Keys as JSON.stringify writes them; values in choices escaped as chosen.
  const walk = (x: unknown, inChoices: boolean): string => {
    if (typeof x === 'string') return inChoices ? str(x) : JSON.stringify(x);
    if (typeof x === 'number') return numberText(x);
    if (x === null || typeof x !== 'object') return JSON.stringify(x);
    if (Array.isArray(x)) return `[${x.map((y) => walk(y, inChoices)).join(',')}]`;
    return `{${Object.entries(x as Json)
      .map(([key, val]) => `${JSON.stringify(key)}:${walk(val, inChoices || key === 'choices')}`)
      .join(',')}}`;
  };
  return walk(v, false);
}

/** Python's float repr where it differs from JavaScript's (-9999.0, 1e-05), else JavaScript's. */
const pyNumber = (x: number) => {
  if (Number.isInteger(x) && Math.abs(x) < 1e16 && !Object.is(x, -0)) return String(x);
  const s = String(x);
  if (/e-\d$/.test(s)) return s.replace(/e-(\d)$/, 'e-0$1');
  return s;
};

const tricky = fc.oneof(
  { weight: 3, arbitrary: fc.string({ unit: 'binary', maxLength: 6 }) },
  {
    weight: 1,
    arbitrary: fc.string({
      unit: fc.constantFrom('"', '\\', '/', '\n', '\u0000', '\ud800', 'é', ',', '[', '{', '}', ']', ':'),
      maxLength: 8,
    }),
  },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      '',
      '"token_ids":[',
      ',"token_ids":[1,2]',
      '"logprobs":{"content":[',
      '"},"logprobs":null,"finish_reason":null,"token_ids":[7]}]}',
      '\\","token_ids":[9]}]}',
      '{"token_ids":[1]}',
      '}]}',
      '\\u0022',
    ),
  },
);

const number = fc.oneof(
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.integer({ min: -10_000, max: 10_000 }),
  fc.constantFrom(-9999, -0, 0, 1e-5, -1.5e-7, 2 ** 53 + 2, 1e21),
);

const choiceArb = fc.record({
  index: fc.oneof({ weight: 8, arbitrary: fc.constant(0) }, { weight: 1, arbitrary: fc.nat(3) }),
  key: fc.constantFrom('content', 'content', 'reasoning_content', 'reasoning'),
  text: tricky,
  // vLLM sends several tokens in one chunk when it streams them faster than they are read
  lp: fc.option(
    fc.array(fc.record({ token: tricky, logprob: number, bytes: fc.array(fc.nat(255), { maxLength: 4 }) }), {
      minLength: 1,
      maxLength: 3,
    }),
    { freq: 4 },
  ),
  finish: fc.option(fc.constantFrom('stop', 'length', ''), { freq: 1 }),
  stopNull: fc.boolean(),
  ids: fc.oneof(
    { weight: 6, arbitrary: fc.tuple(fc.nat(200_000)) as fc.Arbitrary<number[]> },
    { weight: 1, arbitrary: fc.array(number, { maxLength: 3 }) },
  ),
});

const chunkOf = (head: Json, c: Infer<typeof choiceArb>): Json => ({
  ...head,
  choices: [
    {
      index: c.index,
      delta: { [c.key]: c.text },
      logprobs: c.lp
        ? {
            content: c.lp.map((e) => ({
              token: e.token,
              logprob: e.logprob,
              bytes: e.bytes,
              top_logprobs: [],
            })),
          }
        : null,
      finish_reason: c.finish,
      ...(c.stopNull ? { stop_reason: null } : {}),
      token_ids: c.ids,
    },
  ],
});

/** Small edits of a chunk's text: most make it malformed or change its shape. */
const edit = fc.record({
  at: fc.nat(),
  kind: fc.constantFrom('delete', 'insert', 'replace'),
  ch: fc.constantFrom(' ', '"', '\\', ',', '}', ']', '0', '-', 'e', '.', 'x', '\n', '[', '{', 'u'),
});
const applyEdit = (s: string, e: Infer<typeof edit>) => {
  const i = e.at % (s.length + 1);
  if (e.kind === 'delete') return s.slice(0, i) + s.slice(i + 1);
  if (e.kind === 'insert') return s.slice(0, i) + e.ch + s.slice(i);
  return s.slice(0, i) + e.ch + s.slice(i + 1);
};

const harnessArb = fc.record({
  ids: fc.boolean(),
  logprobs: fc.boolean(),
  wire: fc.constantFrom(undefined, undefined, 'messages', 'responses'),
}) as fc.Arbitrary<Harness>;

describe('StreamRelay', () => {
  it('with the chunk scanner relays and records exactly what JSON.parse of every chunk gives', () => {
    let scanned = 0;
    fc.assert(
      fc.property(
        fc.record({ id: tricky, created: fc.oneof(fc.nat(), number), model: tricky }),
        fc.array(choiceArb, { minLength: 1, maxLength: 8 }),
        fc.array(fc.nat(3), { maxLength: 6 }),
        fc.boolean(),
        harnessArb,
        (h, choices, escapes, python, harness) => {
          // A translator makes a random id for a chunk without a usable one: give it one.
          const head = {
            id: harness.wire ? `a${h.id}` : h.id,
            object: 'chat.completion.chunk',
            created: h.created,
            model: h.model,
          };
          const text = (o: Json) => dumps(o, escapes, python ? pyNumber : (x) => JSON.stringify(x));
          const events = [
            text({
              ...head,
              choices: [
                { index: 0, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null },
              ],
            }),
            ...choices.map((c) => text(chunkOf(head, c))),
            '[DONE]',
          ];
          scanned += expectSame(events, harness);
          // The object a scanned chunk stands for (what a translator gets) is JSON.parse's, key order too.
          const sc = new ChatChunkScanner(true);
          sc.learn(JSON.parse(events[0]));
          for (const e of events.slice(1, -1))
            if (sc.scan(e)) {
              expect(sc.chunk(e)).toEqual(JSON.parse(e));
              expect(JSON.stringify(sc.chunk(e))).toBe(JSON.stringify(JSON.parse(e)));
            }
        },
      ),
      { numRuns: 1500 },
    );
    // The property is about the scanner: most of those chunks must have been scanned.
    expect(scanned).toBeGreaterThan(1500);
  });

  it('reads an edited chunk (malformed, another shape) exactly as JSON.parse does, or leaves it to it', () => {
    fc.assert(
      fc.property(
        fc.array(choiceArb, { minLength: 1, maxLength: 4 }),
        fc.array(fc.tuple(fc.nat(3), edit), { minLength: 1, maxLength: 3 }),
        harnessArb,
        (choices, edits, harness) => {
          const head = {
            id: 'chatcmpl-1',
            object: 'chat.completion.chunk',
            created: 1_700_000_000,
            model: 'm',
          };
          const events = [
            JSON.stringify({
              ...head,
              choices: [{ index: 0, delta: { role: 'assistant' }, logprobs: null }],
            }),
            ...choices.map((c) => JSON.stringify(chunkOf(head, c))),
          ];
          for (const [which, e] of edits) {
            const k = 1 + (which % choices.length);
            events[k] = applyEdit(events[k], e);
          }
          events.push('[DONE]');
          expectSame(events, harness);
        },
      ),
      { numRuns: 3000 },
    );
  });

  const head = '{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[';
  const first = `${head}{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}`;
  const token = (content: string, rest = '') =>
    `${head}{"index":0,"delta":{"content":${JSON.stringify(content)}},"logprobs":{"content":[{"token":"a","logprob":-0.5,"bytes":[97],"top_logprobs":[]}]},"finish_reason":null,"token_ids":[42]${rest}}]}`;

  it('scans the usual vLLM token chunk', () => {
    const { fast } = relayBoth([first, token('a'), token('b'), '[DONE]'], { ids: false, logprobs: false });
    expect(fast.scanned).toBe(2);
    expect(fast.frames[1]).toBe(
      `data: ${head}{"index":0,"delta":{"content":"a"},"logprobs":null,"finish_reason":null}]}\n\n`,
    );
  });

  it('scans a chunk of several tokens', () => {
    const two = token('a').replace(
      '"top_logprobs":[]}]},"finish_reason":null,"token_ids":[42]',
      '"top_logprobs":[]},{"token":"b","logprob":-1e-7,"bytes":[98],"top_logprobs":[]}]},"finish_reason":null,"token_ids":[42,43]',
    );
    expect(two).not.toBe(token('a'));
    for (const harness of [
      { ids: false, logprobs: false },
      { ids: true, logprobs: true },
    ]) {
      expect(expectSame([first, two, '[DONE]'], harness)).toBe(1);
      const { fast } = relayBoth([first, two, '[DONE]'], harness);
      expect(JSON.parse(fast.record).tokens.response_logprobs).toEqual([-0.5, -1e-7]);
    }
  });

  it.each<[string, string, number]>([
    ['whitespace', token('a').replace('"delta":', '"delta": '), 1],
    ['a key after the token ids', token('a', ',"extra":1'), 1],
    [
      'a top logprob',
      token('a').replace('"top_logprobs":[]', '"top_logprobs":[{"token":"b","logprob":-1,"bytes":[]}]'),
      1,
    ],
    ['usage', `${token('a').slice(0, -1)},"usage":{"prompt_tokens":1,"completion_tokens":1}}`, 1],
    // its head is learned: the next chunk (the first id again) is not in that shape
    ['another id', token('a').replace('chatcmpl-1', 'chatcmpl-2'), 0],
    // the stream fails at these
    ['not JSON', token('a').replace('-0.5', '-.5'), 0],
    ['a raw control character', token('a\u0001').replace('\\u0001', '\u0001'), 0],
    ['NaN', token('a').replace('-0.5', 'NaN'), 0],
    ...['42.', '4.e1', '42e', '42e+', '-', '042', '+42', '.5', '0x2a', '4_2'].map(
      (n): [string, string, number] => [
        `the token id ${n}`,
        token('a').replace('"token_ids":[42]', `"token_ids":[${n}]`),
        0,
      ],
    ),
    ...['\\x41', '\\u004', '\\U0041', '\\'].map((e): [string, string, number] => [
      `the escape ${e}`,
      token('a').replace('"token":"a"', `"token":"${e}"`),
      0,
    ]),
  ])('leaves a chunk with %s to JSON.parse', (_name, text, scannedAfter) => {
    for (const harness of [
      { ids: false, logprobs: false },
      { ids: true, logprobs: true },
    ])
      expect(expectSame([first, text, token('b'), '[DONE]'], harness)).toBe(scannedAfter);
  });
});
