// A candidate is stored as a patch against its parent: applying the patch gives the candidate back
// byte for byte, and the edit budget counts what a person would count.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { addedLines, applyPatch, diffTrees, patchStats, type Tree, unifiedDiff } from './diff';
import { treeHash } from './snapshot';

describe('patches between harness folders', () => {
  it('applying the patch to the parent gives the child exactly (any texts, added and deleted files)', () => {
    const line = fc.constantFrom('a', 'b', 'c', '', 'x = 1', '}');
    const text = fc.array(line, { maxLength: 30 }).map((ls) => ls.join('\n'));
    const tree = fc.dictionary(fc.constantFrom('a.mjs', 'b/c.ts', 'README.md'), text);
    fc.assert(
      fc.property(tree, tree, (a, b) => {
        const from: Tree = new Map(Object.entries(a));
        const to: Tree = new Map(Object.entries(b));
        const patch = diffTrees(from, to);
        const back = applyPatch(from, patch);
        expect(Object.fromEntries(back)).toEqual(Object.fromEntries(to));
        expect(treeHash(back)).toBe(treeHash(to));
      }),
      { numRuns: 300 },
    );
  });

  it('counts files, hunks and changed lines, and renders unified diff text', () => {
    const from: Tree = new Map([
      ['agent.mjs', 'one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\nnine\nten\n'],
    ]);
    const to: Tree = new Map([
      ['agent.mjs', 'one\nTWO\nthree\nfour\nfive\nsix\nseven\neight\nnine\nTEN\n'],
      ['new.txt', 'hello\n'],
    ]);
    const patch = diffTrees(from, to);
    expect(patchStats(patch)).toEqual({ files: 2, hunks: 3, lines: 5 });
    expect(addedLines(patch)).toEqual(['TWO', 'TEN', 'hello']);
    expect(unifiedDiff(patch)).toContain('@@ -1,5 +1,5 @@\n one\n-two\n+TWO\n');
    expect(diffTrees(from, from)).toEqual([]);
  });

  it('the content address changes with any byte and not with the order files were read in', () => {
    const a: Tree = new Map([
      ['x', '1'],
      ['y', '2'],
    ]);
    const b: Tree = new Map([
      ['y', '2'],
      ['x', '1'],
    ]);
    expect(treeHash(a)).toBe(treeHash(b));
    expect(treeHash(new Map([['x', '1 ']]))).not.toBe(treeHash(new Map([['x', '1']])));
  });
});
