// Run config checks that keep a setting from silently doing nothing.
import { describe, expect, it } from 'vitest';
import { HarnessConfig } from './config';

const ray = { ray: { address: 'http://127.0.0.1:8265' } };

describe('harness config', () => {
  it('refuses a persistent harness on Ray workers, naming harness.mode (they start one process per rollout)', () => {
    const parsed = HarnessConfig.safeParse({ command: ['node', 'h.mjs'], mode: 'persistent', workers: ray });
    expect(parsed.success).toBe(false);
    const issue = parsed.error?.issues.find((i) => i.path.join('.') === 'mode');
    expect(issue?.message).toMatch(/persistent runs on the daemon's own workers only/);
  });

  it('takes a spawned harness on Ray workers and a persistent one on the daemon workers', () => {
    expect(HarnessConfig.safeParse({ command: ['node', 'h.mjs'], workers: ray }).success).toBe(true);
    expect(HarnessConfig.safeParse({ command: ['node', 'h.mjs'], mode: 'persistent' }).success).toBe(true);
  });
});
