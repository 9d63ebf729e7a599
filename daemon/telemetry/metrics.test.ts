// The scrape-time gauges over a real SQLite store: rollouts of running runs by state, runs by status,
// the latest step's metrics, node health; read back with a Prometheus text-format parser.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import parsePrometheusTextFormat, { type Family } from 'parse-prometheus-text-format';
import { afterEach, describe, expect, it } from 'vitest';
import { openStore } from '../store/open';
import type { Store } from '../store/store';
import { DaemonMetrics, NameBucket } from './metrics';

let dir: string;
let store: Store;
afterEach(async () => {
  await store?.close();
  rmSync(dir, { recursive: true, force: true });
});

const value = (families: Family[], name: string, labels: Record<string, string>) =>
  families
    .find((f) => f.name === name)
    ?.metrics.find((m) => Object.entries(labels).every(([k, v]) => m.labels?.[k] === v))?.value;

describe('scrape-time gauges', () => {
  it('show rollouts by state, runs by status, the latest step metrics and node health', async () => {
    dir = mkdtempSync(join(tmpdir(), 'harness-rl-metrics-'));
    store = await openStore('sqlite', dir);
    const run = await store.createRun({ name: 'grpo', config: {} });
    await store.updateRun(run.id, { status: 'running', step: 2 });
    await store.createRun({ name: 'old', config: {} });
    await store.createRollouts([1, 2, 3].map(() => ({ kind: 'run' as const, run_id: run.id })));
    const claimed = await store.claimRollout({ run_id: run.id });
    expect(claimed).not.toBeNull();
    await store.addRunMetrics(run.id, 1, { loss: 0.9, reward_mean: 0.1 });
    await store.addRunMetrics(run.id, 2, {
      loss: 0.4,
      reward_mean: 0.6,
      logprob_diff_mean: 0.02,
      prob_correlation: 0.99,
      kl: null,
    });
    await store.upsertNode({
      id: 'n1',
      name: 'gpu-a',
      kind: 'inference',
      url: 'ws://127.0.0.1:9000',
      status: 'ready',
      model_version: 2,
      detail: null,
      last_seen_at: new Date().toISOString(),
    });
    const metrics = new DaemonMetrics({ store, recorderQueue: () => 0, spans: () => null, log: () => {} });
    const families = parsePrometheusTextFormat(await metrics.text());
    expect(value(families, 'harness_rl_rollouts', { run_id: run.id, state: 'queued' })).toBe('2');
    expect(value(families, 'harness_rl_rollouts', { run_id: run.id, state: 'running' })).toBe('1');
    expect(value(families, 'harness_rl_runs', { status: 'running' })).toBe('1');
    expect(value(families, 'harness_rl_runs', { status: 'created' })).toBe('1');
    expect(value(families, 'harness_rl_run_step', { run_id: run.id, name: 'grpo' })).toBe('2');
    const step = (metric: string) => value(families, 'harness_rl_step_metric', { run_id: run.id, metric });
    expect([step('loss'), step('reward_mean'), step('logprob_diff_mean'), step('prob_correlation')]).toEqual([
      '0.4',
      '0.6',
      '0.02',
      '0.99',
    ]);
    expect(step('kl')).toBeUndefined();
    expect(value(families, 'harness_rl_node_up', { node: 'gpu-a', status: 'ready' })).toBe('1');
    expect(value(families, 'harness_rl_node_up', { node: 'gpu-a', status: 'unhealthy' })).toBe('0');
  });
});

describe('tool run labels', () => {
  it('keep the first names a harness reports and count the rest as other, so a scrape stays small', () => {
    const bucket = new NameBucket(2);
    expect([bucket.of('Bash'), bucket.of('Read'), bucket.of('mcp__x__y'), bucket.of('Bash')]).toEqual([
      'Bash',
      'Read',
      'other',
      'Bash',
    ]);
    expect(bucket.of(null)).toBe('other');
    expect(new NameBucket(5).of('t'.repeat(300))).toHaveLength(64);
  });
});
