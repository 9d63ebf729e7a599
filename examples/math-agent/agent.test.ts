import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { feedback, MathTask, question, scoreAnswer } from './agent';

describe('math agent reward', () => {
  it('gives 1 only for the exact digits followed by the end of the turn', () => {
    expect(scoreAnswer('7', true, 7)).toBe(1);
    expect(scoreAnswer(' 12 ', true, 12)).toBe(1);
    expect(scoreAnswer('7', false, 7)).toBe(0.5); // cut off before ending its turn
  });
  it('gives partial credit that a random policy almost never earns', () => {
    expect(scoreAnswer('4', true, 7)).toBeCloseTo(0.65, 10); // a digit and the end, wrong digit
    expect(scoreAnswer('7xyz', false, 7)).toBeCloseTo(0.25, 10);
    expect(scoreAnswer('q#k', false, 7)).toBe(0);
    expect(scoreAnswer('', false, 7)).toBe(0);
    expect(scoreAnswer('', true, 7)).toBe(0); // ended at once: the end is in the wrong place
  });
  it('tells the model what the calculator says, at the end of the message', () => {
    const t = MathTask.parse({ id: 'x', a: 3, b: 4, op: '+', answer: 7 });
    expect(question(t)).toBe('3+4=?');
    expect(feedback(t, '7')).toBe('right, the calculator says 7');
    expect(feedback(t, '9x')).toBe('no, the calculator says 7');
  });
});

describe('the task set', () => {
  const tasks = readFileSync(new URL('./tasks.jsonl', import.meta.url), 'utf8')
    .split('\n')
    .filter((l) => l.trim())
    .map((l, i) => {
      const r = MathTask.safeParse(JSON.parse(l));
      if (!r.success) throw new Error(`tasks.jsonl line ${i + 1}: ${r.error.message}`);
      return r.data;
    });
  it('has correct answers, unique ids, and every answer 0–9 equally often', () => {
    expect(tasks.length).toBeGreaterThanOrEqual(64);
    expect(new Set(tasks.map((t) => t.id)).size).toBe(tasks.length);
    for (const t of tasks) expect(t.answer).toBe(t.op === '+' ? t.a + t.b : t.a - t.b);
    const counts = new Map<number, number>();
    for (const t of tasks) counts.set(t.answer, (counts.get(t.answer) ?? 0) + 1);
    expect([...counts.keys()].sort()).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(new Set(counts.values()).size).toBe(1);
  });
});
