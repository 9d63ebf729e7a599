// Which train tasks a step samples: a seeded shuffle per epoch, cycling through all tasks.
// Deterministic in (seed, step), so a resumed run picks exactly the tasks it would have picked.
import { shuffled } from '../random';

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
