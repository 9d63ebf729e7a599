// Run config checks that keep a setting from silently doing nothing.
import { describe, expect, it } from 'vitest';
import { HarnessConfig } from './config';

const ray = { ray: { address: 'http://127.0.0.1:8265' } };

describe('harness config', () => {
  it('takes a persistent harness on Ray workers (the Python workers run it, workers/python persistent.py) and on the daemon workers', () => {
    const parsed = HarnessConfig.safeParse({ command: ['node', 'h.mjs'], mode: 'persistent', workers: ray });
    expect(parsed.success, JSON.stringify(parsed.error?.issues)).toBe(true);
    expect(parsed.data?.mode).toBe('persistent');
    expect(HarnessConfig.safeParse({ command: ['node', 'h.mjs'], mode: 'persistent' }).success).toBe(true);
  });

  it('takes a spawned harness on Ray workers', () => {
    expect(HarnessConfig.safeParse({ command: ['node', 'h.mjs'], workers: ray }).success).toBe(true);
  });
});
