// The byte budget every per-rollout cache is built on.
import { describe, expect, it } from 'vitest';
import { BoundedMap, jsonBytes } from './bounded-map';

describe('BoundedMap', () => {
  it('never holds more than its budget: the entries set longest ago go first', () => {
    const evicted: string[] = [];
    const m = new BoundedMap<string, number>(100, (k) => evicted.push(k));
    m.set('a', 1, 40);
    m.set('b', 2, 40);
    m.set('a', 3, 40); // set again: the newest now
    m.set('c', 4, 40);
    expect(evicted).toEqual(['b']);
    expect([m.has('a'), m.has('b'), m.has('c')]).toEqual([true, false, true]);
    expect(m.bytes).toBe(80);
    m.set('big', 5, 500); // alone over the budget: it goes too
    expect(m.size).toBe(0);
    expect(m.bytes).toBe(0);
  });

  it('counts what is deleted, and drops stale entries from the oldest on', () => {
    const m = new BoundedMap<string, number>(1000);
    for (let i = 0; i < 5; i++) m.set(`k${i}`, i, 10);
    m.delete('k4');
    m.deleteOldestWhile((v) => v < 2);
    expect(m.size).toBe(2);
    expect(m.bytes).toBe(20);
    m.deleteWhere((v) => v === 3);
    expect(m.get('k2')).toBe(2);
    expect(m.bytes).toBe(10);
  });

  it('weighs parsed JSON by its text and slots', () => {
    expect(jsonBytes('x'.repeat(1000))).toBeGreaterThan(1000);
    expect(jsonBytes([{ role: 'user', content: 'x'.repeat(48 * 1024) }])).toBeGreaterThan(48 * 1024);
    expect(jsonBytes(null)).toBe(8);
  });
});
