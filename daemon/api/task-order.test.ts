import { describe, expect, it } from 'vitest';
import { refillTasks, tasksForStep } from './task-order';

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

describe('refill rounds (schedule.dynamic_sampling)', () => {
  const tasks = Array.from({ length: 10 }, (_, i) => i);

  it('take the tasks after the step’s own, none of the step twice while unused tasks remain', () => {
    const own = tasksForStep(tasks, 1, 3, 5);
    const one = refillTasks(tasks, 1, 3, 5, 1);
    const two = refillTasks(tasks, 1, 3, 5, 2);
    expect(new Set([...own, ...one, ...two]).size).toBe(9);
    // the next tasks in the seeded order: the next step's own come first
    expect(one).toEqual(tasksForStep(tasks, 2, 3, 5));
    expect(refillTasks(tasks, 1, 3, 5, 2)).toEqual(two);
  });

  it('repeat a task within the step only once all tasks were sampled in it', () => {
    const rounds = [0, 1, 2, 3].map((r) =>
      r === 0 ? tasksForStep(tasks, 0, 4, 1) : refillTasks(tasks, 0, 4, 1, r),
    );
    const flat = rounds.flat();
    expect(new Set(flat.slice(0, 10)).size).toBe(10);
    expect(flat).toHaveLength(16);
    expect(new Set(flat.slice(10)).size).toBe(6);
    expect(refillTasks([1, 2], 0, 3, 0, 1)).toHaveLength(3);
    expect(refillTasks([], 0, 3, 0, 1)).toEqual([]);
  });
});
