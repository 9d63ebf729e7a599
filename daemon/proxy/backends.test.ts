import { describe, expect, it } from 'vitest';
import { BackendPool } from './backends';

// Port 9 (discard) on loopback: nothing answers, so the pool's model-list fetch fails quietly.
const URL_A = 'http://127.0.0.1:9/v1';

describe('BackendPool: one URL shared by runs', () => {
  it('keeps one backend per run on a URL, each with its own version, loading state and removal', () => {
    const pool = new BackendPool(1000);
    pool.add(URL_A, { runId: 'run_a', modelVersion: 0, weights: { adapter: 'policy-a' } });
    pool.add(URL_A, { runId: 'run_b', modelVersion: 0, weights: { adapter: 'policy-b' } });
    pool.add(URL_A); // the shared one (`--backend URL`)
    pool.setModelVersion(URL_A, 3, 'run_a');
    pool.setLoading(URL_A, true, 'run_b');
    const byRun = new Map(pool.list().map((b) => [b.run_id, b]));
    expect(byRun.size).toBe(3);
    expect(byRun.get('run_a')?.model_version).toBe(3);
    expect(byRun.get('run_b')?.model_version).toBe(0);
    expect(pool.pick(null, undefined, 'run_a')?.runId).toBe('run_a');
    expect(pool.pick(null, undefined, 'run_b')).toBeNull(); // loading
    expect(pool.loading('run_b')).toBe(true);
    expect(pool.loading('run_a')).toBe(false);
    pool.remove(URL_A, 'run_a');
    expect(pool.list().map((b) => b.run_id)).toEqual(['run_b', null]);
  });

  it('refuses a second run whose weights would overwrite the first one’s, naming what to change', () => {
    const pool = new BackendPool(1000);
    pool.add(URL_A, { runId: 'run_a', weights: { adapter: 'policy' } });
    expect(() => pool.add(URL_A, { runId: 'run_b', weights: { adapter: 'policy' } })).toThrow(
      /already serves run run_a with the LoRA adapter "policy": give this run another model.name/,
    );
    expect(() => pool.add(URL_A, { runId: 'run_c', weights: { adapter: null } })).toThrow(
      /full weights .* its own inference endpoints/,
    );
    // Readding a run's own backend is not a clash; another URL is not either.
    pool.add(URL_A, { runId: 'run_a', weights: { adapter: 'policy' } });
    pool.add('http://127.0.0.1:9/other/v1', { runId: 'run_b', weights: { adapter: 'policy' } });
    expect(pool.list().map((b) => b.run_id)).toEqual(['run_a', 'run_b']);
  });

  it('a node whose backend is not up takes no calls until it is', () => {
    const pool = new BackendPool(1000);
    pool.add(URL_A, { runId: 'run_a' });
    pool.setReady(URL_A, false, 'run_a');
    expect(pool.pick(null, undefined, 'run_a')).toBeNull();
    expect(pool.loading('run_a')).toBe(true);
    expect(pool.list()[0].healthy).toBe(false);
    pool.setReady(URL_A, true, 'run_a');
    expect(pool.pick(null, undefined, 'run_a')?.url).toBe(URL_A);
  });
});
