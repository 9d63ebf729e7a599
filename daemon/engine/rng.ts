// The engine's seeded randomness: initialization and sampling draw from it, so a seed repeats a run.
import { mulberry32 } from '../random';

/** mulberry32 (../random.ts) from a mixed seed, a few draws in; next() in [0, 1). */
export class Rng {
  private readonly draw: () => number;
  constructor(seed: number) {
    this.draw = mulberry32(Math.floor(seed) ^ 0x9e3779b9);
    for (let i = 0; i < 4; i++) this.draw();
  }
  next(): number {
    return this.draw();
  }
  normal(): number {
    const u = Math.max(this.next(), 1e-12);
    return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * this.next());
  }
}
