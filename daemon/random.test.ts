import { describe, expect, it } from 'vitest';
import { Rng } from './engine/rng';
import { mulberry32, shuffled } from './random';

describe('seeded randomness', () => {
  it('a seed gives the sequence it always gave (runs, evaluations and the engine repeat)', () => {
    const r = mulberry32(42);
    expect([r(), r(), r()]).toEqual([0.6011037519201636, 0.44829055899754167, 0.8524657934904099]);
    expect(shuffled([0, 1, 2, 3, 4, 5, 6, 7, 8, 9], 7)).toEqual([6, 5, 8, 1, 2, 3, 4, 7, 9, 0]);
    const e = new Rng(3);
    expect([e.next(), e.next(), e.normal()]).toEqual([
      0.5246529581490904, 0.6920595965348184, -1.049510618514355,
    ]);
  });

  it('a shuffle is a permutation that depends on the seed', () => {
    const tasks = Array.from({ length: 10 }, (_, i) => i);
    const a = shuffled(tasks, 1);
    expect([...a].sort((x, y) => x - y)).toEqual(tasks);
    expect(shuffled(tasks, 1)).toEqual(a);
    expect(shuffled(tasks, 2)).not.toEqual(a);
  });
});
