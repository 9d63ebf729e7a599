// The remembered bases: what a new call may be stored from, within a budget of bytes.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { storedCall } from '../test-calls';
import { CallChains, chainedColumns, chainKey, MAX_DEPTH, sharedChars } from './call-chain';

const ids = (n: number, seed = 0) => Array.from({ length: n }, (_, i) => i + seed);
const NO_TEXTS = { request: null, backend: null };

describe('CallChains', () => {
  it('links a prompt to its chain’s last call when they share enough ids, counting into its answer', () => {
    const bases = new CallChains();
    const first = storedCall({ id: 'c1', prompt_ids: ids(300), response_ids: [900, 901] });
    bases.remember('k', first, NO_TEXTS, null);
    expect(bases.link('k', [...ids(300), 900, 901, 7], null, null)).toEqual({
      base: 'c1',
      promptShared: 302,
      requestShared: null,
      backendShared: 0,
      depth: 1,
    });
    expect(bases.link('k', [...ids(300), 900, 5], null, null)).toEqual({
      base: 'c1',
      promptShared: 301,
      requestShared: null,
      backendShared: 0,
      depth: 1,
    });
    // Too little in common, another chain, or no ids: stored whole.
    expect(bases.link('k', ids(300, 1), null, null)).toBeNull();
    expect(bases.link('other', ids(300), null, null)).toBeNull();
    expect(bases.link('k', null, null, null)).toBeNull();
    expect(bases.link(null, ids(300), null, null)).toBeNull();
  });

  it(`stores every ${MAX_DEPTH}th call of a chain whole`, () => {
    const bases = new CallChains();
    let link = null;
    const depths: number[] = [];
    for (let k = 0; k < 2 * MAX_DEPTH; k++) {
      link = bases.link('k', ids(300 + k), null, null);
      depths.push(link?.depth ?? 0);
      bases.remember(
        'k',
        storedCall({ id: `c${k}`, prompt_ids: ids(300 + k), response_ids: [] }),
        NO_TEXTS,
        link,
      );
    }
    expect(depths.filter((d) => d === 0)).toHaveLength(2);
    expect(Math.max(...depths)).toBe(MAX_DEPTH - 1);
  });

  it('forgets the least recently recorded chains past its budget of ids', () => {
    const bases = new CallChains(8 * 1000);
    for (const k of ['a', 'b', 'c'])
      bases.remember(k, storedCall({ prompt_ids: ids(400), response_ids: [] }), NO_TEXTS, null);
    expect(bases.link('a', ids(400), null, null)).toBeNull();
    expect(bases.link('b', ids(400), null, null)).not.toBeNull();
    expect(bases.link('c', ids(400), null, null)).not.toBeNull();
    // Recording into b again makes c the oldest.
    bases.remember('b', storedCall({ prompt_ids: ids(400), response_ids: [] }), NO_TEXTS, null);
    bases.remember('d', storedCall({ prompt_ids: ids(400), response_ids: [] }), NO_TEXTS, null);
    expect(bases.link('c', ids(400), null, null)).toBeNull();
    expect(bases.link('b', ids(400), null, null)).not.toBeNull();
  });

  it('keys a chain by rollout, attempt and recording', () => {
    expect(chainKey({ rollout_id: null, attempt_id: null, recording_id: null })).toBeNull();
    const keys = new Set(
      [
        { rollout_id: 'r', attempt_id: null, recording_id: null },
        { rollout_id: 'r', attempt_id: 'a', recording_id: null },
        { rollout_id: 'r', attempt_id: 'b', recording_id: null },
        { rollout_id: null, attempt_id: null, recording_id: 'rec' },
      ].map(chainKey),
    );
    expect(keys.size).toBe(4);
  });

  it('links a request that resends the last request’s text, with or without shared prompt ids', () => {
    const bases = new CallChains();
    const history = JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'x'.repeat(2000) }] });
    bases.remember(
      'k',
      storedCall({ id: 'c1', prompt_ids: ids(10), response_ids: [] }),
      { request: history, backend: null },
      null,
    );
    const next = `${history.slice(0, -2)},{"role":"tool","content":"done"}]}`;
    expect(bases.link('k', ids(12), next, null)).toEqual({
      base: 'c1',
      promptShared: 10,
      requestShared: history.length - 2,
      backendShared: 0,
      depth: 1,
    });
    expect(bases.link('k', null, next, null)).toMatchObject({
      promptShared: null,
      requestShared: history.length - 2,
    });
    // A short shared text alone is not worth a link.
    expect(bases.link('k', ids(12), `${history.slice(0, 500)}"}`, null)).toBeNull();
  });
});

describe('sharedChars', () => {
  it('counts the leading characters two texts share, across its chunks', () => {
    const naive = (a: string, b: string) => {
      let i = 0;
      while (i < a.length && i < b.length && a[i] === b[i]) i++;
      return i > 0 && /[\uD800-\uDBFF]/.test(a[i - 1]) ? i - 1 : i;
    };
    fc.assert(
      fc.property(
        fc.string({ unit: 'binary', maxLength: 3000 }),
        fc.string({ maxLength: 50 }),
        fc.string({ maxLength: 50 }),
        fc.nat(3000),
        (common, a, b, cut) => {
          const x = common + a;
          const y = common.slice(0, cut) + b + common.slice(cut);
          expect(sharedChars(x, y)).toBe(naive(x, y));
          expect(sharedChars(y, x)).toBe(naive(x, y));
        },
      ),
      { numRuns: 300 },
    );
  });

  it('never ends between the halves of a surrogate pair (the rest would start with a lone half the database cannot store)', () => {
    // U+EEC00 and U+EEC01 share their high surrogate: a store test's property run found this.
    expect(sharedChars('ab\u{EEC00}', 'ab\u{EEC01}')).toBe(2);
    expect(sharedChars('ab\u{EEC00}x', 'ab\u{EEC00}y')).toBe(4);
    expect(sharedChars('ab\uDB7B', 'ab\u{EEC00}')).toBe(2);
  });
});

describe('chainedColumns', () => {
  const request = JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'y'.repeat(1500) }] });

  it('stores a backend request that extends its own request as the rest after it', () => {
    const backend = `${request.slice(0, -1)},"return_token_ids":true,"logprobs":true}`;
    expect(chainedColumns(null, request, backend)).toEqual({
      request,
      requestShared: null,
      requestRest: null,
      backend: null,
      backendShared: request.length - 1,
      backendRest: ',"return_token_ids":true,"logprobs":true}',
      backendFromBase: false,
    });
    // A backend request of its own (a bridged completion) is stored whole.
    const own = JSON.stringify({ model: 'm', prompt: [1, 2, 3] });
    expect(chainedColumns(null, request, own)).toMatchObject({ backend: own, backendShared: null });
  });

  it('stores a bridged backend request (a token prompt) as the rest after its base’s', () => {
    const bases = new CallChains();
    const body = (n: number) => JSON.stringify({ model: 'm', prompt: ids(n, 1000), max_tokens: 4096 - n });
    bases.remember('k', storedCall({ id: 'c1', prompt_ids: null }), { request, backend: body(400) }, null);
    const link = bases.link('k', null, request, body(450));
    const shared = `{"model":"m","prompt":[${ids(400, 1000).join(',')}`.length;
    expect(link).toMatchObject({ base: 'c1', requestShared: request.length, backendShared: shared });
    expect(chainedColumns(link, request, body(450))).toMatchObject({
      backend: null,
      backendShared: shared,
      backendRest: body(450).slice(shared),
      backendFromBase: true,
    });
  });

  it('stores a linked request as the rest after its base’s, and `null` in its JSON column', () => {
    const link = { base: 'c1', promptShared: 300, requestShared: 1200, backendShared: 0, depth: 3 };
    expect(chainedColumns(link, request, null)).toEqual({
      request: 'null',
      requestShared: 1200,
      requestRest: request.slice(1200),
      backend: null,
      backendShared: null,
      backendRest: null,
      backendFromBase: false,
    });
  });
});
