// The remembered bases: what a new call may be stored from, within a budget of ids.
import { describe, expect, it } from 'vitest';
import { storedCall } from '../test-calls';
import { chainKey, MAX_DEPTH, PromptBases } from './prompt-chain';

const ids = (n: number, seed = 0) => Array.from({ length: n }, (_, i) => i + seed);

describe('PromptBases', () => {
  it('links a prompt to its chain’s last call when they share enough ids, counting into its answer', () => {
    const bases = new PromptBases();
    const first = storedCall({ id: 'c1', prompt_ids: ids(300), response_ids: [900, 901] });
    bases.remember('k', first, null);
    expect(bases.link('k', [...ids(300), 900, 901, 7])).toEqual({ base: 'c1', shared: 302, depth: 1 });
    expect(bases.link('k', [...ids(300), 900, 5])).toEqual({ base: 'c1', shared: 301, depth: 1 });
    // Too little in common, another chain, or no ids: stored whole.
    expect(bases.link('k', ids(300, 1))).toBeNull();
    expect(bases.link('other', ids(300))).toBeNull();
    expect(bases.link('k', null)).toBeNull();
    expect(bases.link(null, ids(300))).toBeNull();
  });

  it(`stores every ${MAX_DEPTH}th call of a chain whole`, () => {
    const bases = new PromptBases();
    let link = null;
    const depths: number[] = [];
    for (let k = 0; k < 2 * MAX_DEPTH; k++) {
      link = bases.link('k', ids(300 + k));
      depths.push(link?.depth ?? 0);
      bases.remember('k', storedCall({ id: `c${k}`, prompt_ids: ids(300 + k), response_ids: [] }), link);
    }
    expect(depths.filter((d) => d === 0)).toHaveLength(2);
    expect(Math.max(...depths)).toBe(MAX_DEPTH - 1);
  });

  it('forgets the least recently recorded chains past its budget of ids', () => {
    const bases = new PromptBases(1000);
    for (const k of ['a', 'b', 'c'])
      bases.remember(k, storedCall({ prompt_ids: ids(400), response_ids: [] }), null);
    expect(bases.link('a', ids(400))).toBeNull();
    expect(bases.link('b', ids(400))).not.toBeNull();
    expect(bases.link('c', ids(400))).not.toBeNull();
    // Recording into b again makes c the oldest.
    bases.remember('b', storedCall({ prompt_ids: ids(400), response_ids: [] }), null);
    bases.remember('d', storedCall({ prompt_ids: ids(400), response_ids: [] }), null);
    expect(bases.link('c', ids(400))).toBeNull();
    expect(bases.link('b', ids(400))).not.toBeNull();
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
});
