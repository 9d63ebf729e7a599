// The backend request's text made from the harness's text must parse to exactly the backend body.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { backendBody, backendText } from './dispatch';

const harnessBody = fc.record(
  {
    model: fc.string(),
    messages: fc.array(fc.record({ role: fc.constantFrom('user', 'system'), content: fc.string() })),
    logprobs: fc.oneof(fc.boolean(), fc.integer({ min: -1, max: 5 }), fc.constant(null)),
    return_token_ids: fc.oneof(fc.boolean(), fc.constant(null)),
    other: fc.jsonValue({ maxDepth: 2 }),
  },
  { requiredKeys: [] },
);

describe('backendText', () => {
  it('parses to the backend body, whatever the harness text looks like', () => {
    fc.assert(
      fc.property(
        harnessBody,
        fc.constantFrom('chat', 'completions') as fc.Arbitrary<'chat' | 'completions'>,
        fc.boolean(),
        fc.constantFrom(0, 1, 2, '\t'),
        fc.constantFrom('', ' ', '\n  '),
        (harness, kind, extras, indent, trailing) => {
          const text = JSON.stringify(harness, null, indent) + trailing;
          const parsed = JSON.parse(text);
          const backend = backendBody(parsed, kind, extras);
          const out = backendText(text, parsed, backend);
          if (Object.keys(parsed).length > 0 || !extras) expect(out).not.toBeNull();
          if (out !== null) expect(JSON.parse(out)).toEqual(backend);
          // nothing added: the harness's own bytes
          if (!extras) expect(out).toBe(text);
        },
      ),
    );
  });

  it('keeps duplicate keys of the harness as the harness meant them, and refuses text that is not one object', () => {
    const text = '{"logprobs":false,"model":"a","model":"b"}';
    const parsed = JSON.parse(text);
    const out = backendText(text, parsed, backendBody(parsed, 'chat', true));
    expect(JSON.parse(out ?? '')).toEqual({ model: 'b', logprobs: true, return_token_ids: true });
    expect(backendText(' {"a":1}', { a: 1 }, { a: 1, b: 2 })).toBeNull();
    expect(backendText('{}', {}, { b: 2 })).toBeNull();
    expect(backendText(undefined, { a: 1 }, { a: 1 })).toBeNull();
  });
});
