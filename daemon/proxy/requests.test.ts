// The zod-free check of common chat bodies may only vouch for bodies ChatBody accepts, and should
// vouch for the usual ones (else the proxy pays for zod on every call).
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ChatBody, MESSAGE_KEYS, surelyChatBody } from './requests';

const opt = { requiredKeys: [] as never[] };
const number = fc.oneof(
  // the bounds of every range ChatBody checks, and either side of them
  fc.constantFrom(-3, -2.5, -2, -0.5, 0, 0.5, 1, 1.5, 2, 2.5, 3, 20, 21, 128, 129, 2 ** 53, -(2 ** 53)),
  fc.integer({ min: -300, max: 300 }),
  fc.double({ min: -5, max: 5, noNaN: true }),
  fc.constant(null),
  fc.string({ maxLength: 3 }),
  fc.boolean(),
);
const part = fc.record(
  { type: fc.constantFrom('text', 'image_url', 'refusal'), text: fc.oneof(fc.string(), fc.integer()) },
  opt,
);
const content = fc.oneof(fc.string(), fc.constant(null), fc.integer(), fc.array(fc.oneof(part, fc.string())));
const toolCall = fc.record(
  {
    id: fc.oneof(fc.string(), fc.integer()),
    type: fc.constantFrom('function', 'custom'),
    function: fc.oneof(
      fc.record(
        { name: fc.oneof(fc.string(), fc.integer()), arguments: fc.oneof(fc.string(), fc.object()) },
        opt,
      ),
      fc.constant(null),
    ),
  },
  opt,
);
const message = fc.record(
  {
    role: fc.constantFrom('system', 'developer', 'user', 'assistant', 'tool', 'function', 'robot'),
    content,
    name: fc.oneof(fc.string(), fc.constant(null), fc.integer()),
    refusal: fc.oneof(fc.string(), fc.constant(null), fc.integer()),
    tool_calls: fc.oneof(fc.array(toolCall, { maxLength: 3 }), fc.constant(null), fc.string()),
    tool_call_id: fc.oneof(fc.string(), fc.integer(), fc.constant(null)),
    function_call: fc.constant({ name: 'f', arguments: '{}' }),
    extra: fc.jsonValue({ maxDepth: 2 }),
  },
  opt,
);
const tool = fc.record(
  {
    type: fc.constantFrom('function', 'custom'),
    function: fc.record(
      {
        name: fc.oneof(fc.string(), fc.integer()),
        description: fc.oneof(fc.string(), fc.constant(null), fc.integer()),
        parameters: fc.oneof(
          fc.object({ maxDepth: 2 }),
          fc.constant(null),
          fc.array(fc.integer()),
          fc.string(),
        ),
        strict: fc.oneof(fc.boolean(), fc.constant(null), fc.string()),
      },
      opt,
    ),
  },
  opt,
);
const anyBody = fc.record(
  {
    model: fc.oneof(fc.string({ maxLength: 4 }), fc.integer()),
    messages: fc.oneof(fc.array(message, { maxLength: 4 }), fc.constant('hi')),
    stream: fc.oneof(fc.boolean(), fc.constant(null), fc.string()),
    stream_options: fc.oneof(
      fc.record({ include_usage: fc.oneof(fc.boolean(), fc.string()) }, opt),
      fc.constant(null),
      fc.string(),
    ),
    n: number,
    max_tokens: number,
    max_completion_tokens: number,
    temperature: number,
    top_p: number,
    frequency_penalty: number,
    presence_penalty: number,
    seed: number,
    top_logprobs: number,
    stop: fc.oneof(
      fc.string(),
      fc.array(fc.oneof(fc.string(), fc.integer()), { maxLength: 20 }),
      fc.constant(null),
    ),
    tools: fc.oneof(fc.array(tool, { maxLength: 3 }), fc.constant(null), fc.object({ maxDepth: 1 })),
    tool_choice: fc.oneof(
      fc.constantFrom('none', 'auto', 'required', 'any', null),
      fc.constant({ type: 'function', function: { name: 'f' } }),
    ),
    parallel_tool_calls: fc.oneof(fc.boolean(), fc.integer()),
    logprobs: fc.oneof(fc.boolean(), fc.integer()),
    user: fc.oneof(fc.string(), fc.integer()),
    logit_bias: fc.constant({ '1': 5 }),
    response_format: fc.constant({ type: 'text' }),
    some_vllm_extra: fc.jsonValue({ maxDepth: 2 }),
  },
  opt,
);

const textParts = fc.array(fc.record({ type: fc.constant('text'), text: fc.string() }), { maxLength: 2 });
/** Bodies an agent sends: every value valid, every parameter the check knows used somewhere. */
const validBody = fc.record(
  {
    model: fc.string({ minLength: 1 }),
    messages: fc.array(
      fc.oneof(
        fc.record(
          {
            role: fc.constantFrom('system', 'user', 'developer'),
            content: fc.oneof(fc.string(), textParts),
            name: fc.string(),
          },
          { requiredKeys: ['role', 'content'] },
        ),
        fc.record(
          {
            role: fc.constant('assistant'),
            content: fc.oneof(fc.string(), fc.constant(null), textParts),
            refusal: fc.oneof(fc.string(), fc.constant(null)),
            name: fc.string(),
            tool_calls: fc.array(
              fc.record({
                id: fc.string(),
                type: fc.constant('function'),
                function: fc.record({ name: fc.string(), arguments: fc.string() }),
              }),
              { maxLength: 2 },
            ),
          },
          { requiredKeys: ['role'] },
        ),
        fc.record({
          role: fc.constant('tool'),
          content: fc.oneof(fc.string(), textParts),
          tool_call_id: fc.string(),
        }),
      ),
      { minLength: 1, maxLength: 5 },
    ),
    stream: fc.boolean(),
    stream_options: fc.record({ include_usage: fc.boolean() }),
    n: fc.integer({ min: 1, max: 128 }),
    max_tokens: fc.integer({ min: 1, max: 100_000 }),
    max_completion_tokens: fc.integer({ min: 1, max: 100_000 }),
    stop: fc.oneof(fc.string(), fc.array(fc.string(), { maxLength: 16 })),
    temperature: fc.double({ min: 0, max: 2, noNaN: true }),
    top_p: fc.double({ min: 0, max: 1, noNaN: true }),
    frequency_penalty: fc.double({ min: -2, max: 2, noNaN: true }),
    presence_penalty: fc.double({ min: -2, max: 2, noNaN: true }),
    seed: fc.integer(),
    user: fc.string(),
    return_token_ids: fc.boolean(),
    tools: fc.array(
      fc.record({
        type: fc.constant('function'),
        function: fc.record(
          {
            name: fc.string({ minLength: 1 }),
            description: fc.string(),
            parameters: fc.object({ maxDepth: 2 }),
            strict: fc.boolean(),
          },
          { requiredKeys: ['name'] },
        ),
      }),
      { maxLength: 3 },
    ),
    tool_choice: fc.constantFrom('auto', 'none', 'required'),
    parallel_tool_calls: fc.boolean(),
    logprobs: fc.boolean(),
    top_logprobs: fc.integer({ min: 0, max: 20 }),
    store: fc.boolean(),
    reasoning_effort: fc.string(),
    service_tier: fc.string(),
    top_k: fc.integer(),
  },
  { requiredKeys: ['model', 'messages'] },
);

/** Values just inside and outside every check, and of other types. */
const EDGES: unknown[] = [
  null,
  '',
  'x',
  'custom',
  'function',
  'tool',
  'robot',
  0,
  -1,
  -2.5,
  0.5,
  1,
  2,
  2.5,
  3,
  16,
  20,
  21,
  128,
  129,
  2 ** 53,
  true,
  [],
  {},
  [1],
  ['a'],
  Array(17).fill('s'),
  { type: 'custom' },
  { type: 'text', text: 1 },
  { name: 'f', arguments: 1 },
  { include_usage: 'yes' },
];
const KEYS = [
  ...new Set([
    ...Object.keys(ChatBody.shape),
    ...MESSAGE_KEYS,
    'id',
    'type',
    'function',
    'text',
    'arguments',
    'description',
    'parameters',
    'strict',
    'include_usage',
  ]),
];

/** Every object and array in `v` with the path to it. */
function containers(v: unknown, out: unknown[] = []): unknown[] {
  if (v && typeof v === 'object') {
    out.push(v);
    for (const x of Object.values(v)) containers(x, out);
  }
  return out;
}

/** A valid body with one place changed: a value replaced by an edge value, a key removed or added. */
const nearlyValid = fc
  .tuple(validBody, fc.nat(), fc.nat(), fc.nat(), fc.constantFrom('replace', 'remove', 'add'))
  .map(([valid, at, which, edge, how]) => {
    const body = structuredClone(valid) as Record<string, unknown>;
    const list = containers(body) as Record<string, unknown>[];
    const target = list[at % list.length];
    const keys = Object.keys(target);
    const value = structuredClone(EDGES[edge % EDGES.length]);
    if (how === 'add' || keys.length === 0)
      target[Array.isArray(target) ? target.length : KEYS[which % KEYS.length]] = value;
    else if (how === 'remove' && !Array.isArray(target)) delete target[keys[which % keys.length]];
    else target[keys[which % keys.length]] = value;
    return body;
  });

describe('surelyChatBody', () => {
  it('vouches only for bodies ChatBody accepts', () => {
    let vouched = 0;
    fc.assert(
      fc.property(
        fc.oneof({ arbitrary: anyBody, weight: 1 }, { arbitrary: nearlyValid, weight: 3 }),
        (body) => {
          if (!surelyChatBody(body)) return;
          vouched++;
          expect(ChatBody.safeParse(body).error).toBeUndefined();
        },
      ),
      { numRuns: 5000 },
    );
    expect(vouched).toBeGreaterThan(300);
  });

  it('vouches for no body one edit away from a valid one that ChatBody refuses (every place, every edge value)', () => {
    const rich = {
      model: 'm',
      messages: [
        { role: 'system', content: 's', name: 'n' },
        { role: 'developer', content: [{ type: 'text', text: 'd' }] },
        { role: 'user', content: [{ type: 'text', text: 'u' }], name: 'n' },
        {
          role: 'assistant',
          content: null,
          refusal: null,
          name: 'n',
          tool_calls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: '{}' } }],
        },
        { role: 'tool', content: 'r', tool_call_id: 'c' },
      ],
      stream: true,
      stream_options: { include_usage: true },
      n: 1,
      max_tokens: 16,
      max_completion_tokens: 16,
      stop: ['a'],
      temperature: 1,
      top_p: 1,
      frequency_penalty: 0,
      presence_penalty: 0,
      seed: 1,
      user: 'u',
      return_token_ids: true,
      tools: [{ type: 'function', function: { name: 'f', description: 'd', parameters: {}, strict: true } }],
      tool_choice: 'auto',
      parallel_tool_calls: true,
      logprobs: true,
      top_logprobs: 1,
      store: false,
      reasoning_effort: 'low',
      service_tier: 'auto',
    };
    expect(surelyChatBody(rich)).toBe(true);
    let edits = 0;
    const wrong: string[] = [];
    const check = (body: unknown, what: string) => {
      edits++;
      if (surelyChatBody(body) && !ChatBody.safeParse(body).success) wrong.push(what);
    };
    const count = containers(rich).length;
    for (let c = 0; c < count; c++) {
      const keysAt = Object.keys(containers(structuredClone(rich))[c] as object);
      for (const [i, edge] of EDGES.entries()) {
        for (const key of [...keysAt, ...KEYS]) {
          const body = structuredClone(rich);
          (containers(body)[c] as Record<string, unknown>)[key] = structuredClone(edge);
          check(body, `container ${c}: ${key} = ${JSON.stringify(EDGES[i])}`);
        }
      }
      for (const key of keysAt) {
        const body = structuredClone(rich);
        delete (containers(body)[c] as Record<string, unknown>)[key];
        check(body, `container ${c}: ${key} removed`);
      }
    }
    expect(wrong.join('\n')).toEqual('');
    expect(edits).toBeGreaterThan(10_000);
  });

  it('vouches for the bodies agents send, so they skip zod', () => {
    fc.assert(
      fc.property(validBody, (body) => {
        expect(ChatBody.safeParse(body).success).toBe(true);
        expect(surelyChatBody(body)).toBe(true);
      }),
    );
  });

  it('takes keys that name Object.prototype members as data', () => {
    const body = JSON.parse(
      '{"model":"m","messages":[{"role":"user","content":"x","__proto__":1},{"role":"__proto__","content":"x"}],"constructor":1,"__proto__":{}}',
    );
    expect(() => surelyChatBody(body)).not.toThrow();
    expect(surelyChatBody(body)).toBe(false);
    expect(
      surelyChatBody(JSON.parse('{"model":"m","messages":[{"role":"user","content":"x"}],"__proto__":1}')),
    ).toBe(true);
  });
});
