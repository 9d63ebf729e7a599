import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseArguments } from '../proxy/translate/common';
import { MAX_JSON_DEPTH, nestsDeeperThan, parseBoundedJson, parseJsonBody, tooDeep } from './body';

describe('nestsDeeperThan', () => {
  it('counts arrays and objects, never what strings hold', () => {
    const at = (text: string, max: number) => nestsDeeperThan(JSON.parse(text), max);
    expect(at('[[[]]]', 3)).toBe(false);
    expect(at('[[[[]]]]', 3)).toBe(true);
    expect(at('{"a":{"b":[1]}}', 3)).toBe(false);
    expect(at('{"a":{"b":[{}]}}', 3)).toBe(true);
    expect(at(JSON.stringify({ text: '[[[[{{{{ "\\" [[[[' }), 1)).toBe(false);
    expect(nestsDeeperThan('[[[[', 0)).toBe(false);
    expect(nestsDeeperThan(JSON.parse(`${'['.repeat(100_000)}${']'.repeat(100_000)}`))).toBe(true);
  });

  it('agrees with the real depth of random JSON', () => {
    const depth = (v: unknown): number =>
      v && typeof v === 'object' ? 1 + Math.max(0, ...Object.values(v).map(depth)) : 0;
    let seed = 7;
    const rand = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    const gen = (d: number): unknown => {
      const r = rand();
      if (d > 12 || r < 0.3) return r < 0.15 ? `s"[{\\${r}` : r;
      if (r < 0.65) return Array.from({ length: 1 + Math.floor(rand() * 3) }, () => gen(d + 1));
      return Object.fromEntries(
        Array.from({ length: 1 + Math.floor(rand() * 3) }, (_, i) => [`k[${i}"`, gen(d + 1)]),
      );
    };
    for (let i = 0; i < 300; i++) {
      const v = gen(0);
      const d = depth(v);
      expect(nestsDeeperThan(v, d)).toBe(false);
      if (d > 0) expect(nestsDeeperThan(v, d - 1)).toBe(true);
    }
  });
});

describe('parseJsonBody', () => {
  it('empty is no body; null, malformed and too deep are problems; the bound itself passes', () => {
    expect(parseJsonBody('  ')).toEqual({ value: undefined });
    expect(parseJsonBody('{"a":1}')).toEqual({ value: { a: 1 } });
    expect(parseJsonBody('null')).toMatchObject({ problem: { code: 'null_body' } });
    expect(parseJsonBody('{"a":')).toMatchObject({ problem: { code: 'invalid_json' } });
    const at = (n: number) => `${'['.repeat(n)}${']'.repeat(n)}`;
    expect(parseJsonBody(at(MAX_JSON_DEPTH))).toHaveProperty('value');
    expect(parseJsonBody(at(MAX_JSON_DEPTH + 1))).toMatchObject({ problem: { code: 'too_deep' } });
  });
});

describe('parseBoundedJson', () => {
  it('counts brackets first and walks only when they could nest too deep: the same answer as the walk', () => {
    fc.assert(
      fc.property(
        fc.jsonValue({ maxDepth: 8 }),
        fc.array(fc.constantFrom('[', '{', '"[{"'), { maxLength: 6 }),
        fc.integer({ min: 0, max: 10 }),
        (v, wraps, max) => {
          // wrap the value in arrays/objects and strings holding brackets
          let text = JSON.stringify(v);
          for (const w of wraps)
            text = w === '[' ? `[${text}]` : w === '{' ? `{"k":${text}}` : `[${w},${text}]`;
          const value = JSON.parse(text);
          expect(tooDeep(text, value, max)).toBe(nestsDeeperThan(value, max));
        },
      ),
      { numRuns: 2000 },
    );
    const n = MAX_JSON_DEPTH;
    // brackets in strings count toward the quick bound, never toward the depth
    expect(parseBoundedJson(`[${'"[{",'.repeat(2 * n)}1]`)).toHaveLength(2 * n + 1);
    expect(parseBoundedJson(`${'['.repeat(n)}${']'.repeat(n)}`)).toBeInstanceOf(Array);
    expect(() => parseBoundedJson(`${'['.repeat(n + 1)}${']'.repeat(n + 1)}`)).toThrow(SyntaxError);
  });

  it('parses like JSON.parse and refuses too deep text as malformed, so callers fall back', () => {
    expect(parseBoundedJson('{"a":[1]}')).toEqual({ a: [1] });
    const deep = `${'['.repeat(10_000)}${']'.repeat(10_000)}`;
    expect(() => parseBoundedJson(deep)).toThrow(SyntaxError);
    // A model's tool-call arguments that deep become {} (as malformed ones do): nothing overflows later.
    expect(parseArguments(deep)).toEqual({});
    expect(() => JSON.stringify(parseArguments(deep))).not.toThrow();
  });
});
