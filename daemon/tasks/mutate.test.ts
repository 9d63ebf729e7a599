// The syntax-tree mutants of small Python and TypeScript sources: each operator proposes the edit a
// person would call that bug, mutated text is still parseable code, and equal texts are one mutant.
import { describe, expect, it } from 'vitest';
import { applyMutant, mutantsOf } from './mutate';

const PY = `def clamp(x, lo, hi):
    """Clamp x."""
    if x < lo and lo <= hi:
        return lo
    total = sum(range(0, x))
    items = [lo, hi][1]
    print(x)
    return min(x, hi) + 1
`;

const TS = `export function clamp(x: number, lo: number, hi: number): boolean {
  if (x === lo || x > hi) {
    log(x);
    return true;
  }
  return Math.max(x, lo) - 2 > 0;
}
`;

describe('mutants of a source file', () => {
  it('python: flips comparisons and booleans, negates conditions, removes statements, swaps arguments, moves range ends and indices by one', async () => {
    const ms = await mutantsOf('m.py', PY, 'python');
    const by = (op: string) => ms.filter((m) => m.operator === op).map((m) => m.description);
    expect(by('compare')).toEqual(expect.arrayContaining(['< → <=', '< → >=', '<= → <', '<= → >']));
    expect(by('boolean')).toEqual(['and → or']);
    expect(by('negate-condition')).toEqual(['condition negated: x < lo and lo <= hi']);
    expect(by('remove-statement')).toEqual(
      expect.arrayContaining(['statement removed: print(x)', 'return removed: return lo']),
    );
    expect(by('swap-arguments')).toEqual(
      expect.arrayContaining(['arguments swapped: (x, hi)', 'arguments swapped: (0, x)']),
    );
    expect(by('off-by-one')).toEqual(
      expect.arrayContaining(['range end x → x + 1', 'range end x → x - 1', '1 → 2', '1 → 0']),
    );
    expect(by('arithmetic')).toEqual(['+ → -']);
    // the docstring is never removed: it is no behaviour
    expect(ms.some((m) => m.description.includes('Clamp'))).toBe(false);
    const negated = ms.find((m) => m.operator === 'negate-condition')!;
    expect(applyMutant(PY, negated)).toContain('if not (x < lo and lo <= hi):');
    expect(negated.line).toBe(3);
  });

  it('typescript: the same operators on its syntax (===, ||, statement blocks, call arguments, booleans)', async () => {
    const ms = await mutantsOf('m.ts', TS, 'typescript');
    const descriptions = ms.map((m) => `${m.operator}: ${m.description}`);
    expect(descriptions).toEqual(
      expect.arrayContaining([
        'compare: === → !==',
        'boolean: || → &&',
        'compare: > → >=',
        'negate-condition: condition negated: (x === lo || x > hi)',
        'remove-statement: statement removed: log(x);',
        'swap-arguments: arguments swapped: (x, lo)',
        'constant: true → false',
        'arithmetic: - → +',
        'constant: 2 → 3',
      ]),
    );
    const negated = ms.find((m) => m.operator === 'negate-condition')!;
    expect(applyMutant(TS, negated)).toContain('if (!(x === lo || x > hi)) {');
  });

  it('no two mutants give the same text, and none leaves it unchanged', async () => {
    const ms = await mutantsOf('m.py', PY, 'python');
    const texts = ms.map((m) => applyMutant(PY, m));
    expect(new Set(texts).size).toBe(texts.length);
    expect(texts).not.toContain(PY);
  });
});
