// Which train tasks a step samples: a seeded shuffle per epoch, cycling through all tasks.
// Deterministic in (seed, step), so a resumed run picks exactly the tasks it would have picked.
import { shuffled } from '../random';

/** Position p of the seeded walk: epoch ⌊p / N⌋ is a fresh shuffle of all N tasks (seed + epoch). */
function seededWalk<T>(tasks: readonly T[], seed: number): (p: number) => T {
  const epochs = new Map<number, T[]>();
  return (p) => {
    const epoch = Math.floor(p / tasks.length);
    let order = epochs.get(epoch);
    if (!order) {
      order = shuffled(tasks, seed * 1_000_003 + epoch);
      epochs.set(epoch, order);
    }
    return order[p % tasks.length];
  };
}

/**
 * The `count` tasks of step `step`: position p = step·count + j walks epoch ⌊p / N⌋, each epoch a fresh
 * shuffle of all N tasks (seed + epoch), so every task is used once per epoch.
 */
export function tasksForStep<T>(tasks: readonly T[], step: number, count: number, seed: number): T[] {
  if (tasks.length === 0) return [];
  const at = seededWalk(tasks, seed);
  return Array.from({ length: count }, (_, j) => at(step * count + j));
}

/**
 * The `count` tasks of extra sampling round `round` (≥ 1) of step `step` (schedule.dynamic_sampling):
 * the walk goes on after the step's own tasks (position (step + 1)·count on, the tasks the next steps
 * sample), skipping every task the step has sampled already, so a step samples a task twice only once it
 * has sampled all N of them. Deterministic in (seed, step, round); the steps' own tasks do not move.
 */
export function refillTasks<T>(
  tasks: readonly T[],
  step: number,
  count: number,
  seed: number,
  round: number,
): T[] {
  if (tasks.length === 0) return [];
  const at = seededWalk(tasks, seed);
  const picked = tasksForStep(tasks, step, count, seed);
  let seen = new Set(picked);
  if (seen.size >= tasks.length) seen = new Set();
  for (let p = (step + 1) * count; picked.length < (round + 1) * count; p++) {
    const task = at(p);
    if (seen.has(task)) continue;
    picked.push(task);
    seen.add(task);
    if (seen.size >= tasks.length) seen = new Set();
  }
  return picked.slice(round * count);
}
