// Which train tasks a step samples: a seeded shuffle per epoch, cycling through all tasks.
// Deterministic in (seed, step), so a resumed run picks exactly the tasks it would have picked.

/** mulberry32: a small seeded PRNG returning floats in [0, 1). */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Fisher–Yates shuffle of a copy. */
export function shuffled<T>(items: readonly T[], seed: number): T[] {
  const out = [...items];
  const random = seededRandom(seed);
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
}

/**
 * The `count` tasks of step `step`: position p = step·count + j walks epoch ⌊p / N⌋, each epoch a fresh
 * shuffle of all N tasks (seed + epoch), so every task is used once per epoch.
 */
export function tasksForStep<T>(tasks: readonly T[], step: number, count: number, seed: number): T[] {
  if (tasks.length === 0) return [];
  const epochs = new Map<number, T[]>();
  const picked: T[] = [];
  for (let j = 0; j < count; j++) {
    const p = step * count + j;
    const epoch = Math.floor(p / tasks.length);
    let order = epochs.get(epoch);
    if (!order) {
      order = shuffled(tasks, seed * 1_000_003 + epoch);
      epochs.set(epoch, order);
    }
    picked.push(order[p % tasks.length]);
  }
  return picked;
}
