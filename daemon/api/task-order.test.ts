import { describe, expect, it } from 'vitest';
import { tasksForStep } from './task-order';

describe('task order', () => {
  const tasks = Array.from({ length: 10 }, (_, i) => i);

  it('every task is used once per epoch before any repeats', () => {
    const seen = [0, 1, 2, 3, 4].flatMap((step) => tasksForStep(tasks, step, 2, 7));
    expect([...seen].sort((x, y) => x - y)).toEqual(tasks);
  });

  it('steps cycle into the next epoch when the batch does not divide the tasks', () => {
    const picked = [0, 1, 2, 3].flatMap((step) => tasksForStep(tasks, step, 3, 0));
    expect(new Set(picked.slice(0, 10)).size).toBe(10);
    expect(picked).toHaveLength(12);
  });

  it('a resumed run picks the same tasks for a step', () => {
    expect(tasksForStep(tasks, 5, 4, 3)).toEqual(tasksForStep(tasks, 5, 4, 3));
  });

  it('more groups than tasks repeat tasks within a step', () => {
    expect(tasksForStep([1, 2], 0, 5, 0)).toHaveLength(5);
    expect(tasksForStep([], 0, 5, 0)).toEqual([]);
  });
});
