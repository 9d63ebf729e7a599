// `harness-rl worker`: the harness as a command, spawned per claimed rollout with the rollout's
// endpoints in its env; the reward is its last stdout line; a nonzero exit fails the attempt.
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { run as worker } from '../../daemon/cli/commands/worker';
import type { Run } from '../../daemon/protocol/entities';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

describe('harness-rl worker', () => {
  let daemon: TestDaemon;
  beforeAll(async () => {
    daemon = await startTestDaemon();
  });
  afterAll(async () => {
    await daemon?.close();
  });

  async function createRun(name: string, harness: Record<string, unknown> = {}): Promise<Run> {
    const config = {
      name,
      tasks: { file: 'examples/math-agent/tasks.jsonl', limit: 2 },
      harness: { workers: 'external', concurrency: 2, timeout_s: 120, max_attempts: 1, ...harness },
      algorithm: { n: 2 },
      schedule: { steps: 1, groups_per_step: 1 },
    };
    const res = await daemon.api<Run>('POST', '/api/runs', { config, base_dir: root });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return res.body;
  }

  it('runs the example math agent per rollout and takes the reward from its last stdout line', async () => {
    const run = await createRun('worker command');
    const code = await worker([
      '--run',
      run.id,
      '--url',
      daemon.url,
      '--token',
      daemon.token,
      '--',
      process.execPath,
      '--import',
      'tsx',
      join(root, 'examples/math-agent/main.ts'),
    ]);
    expect(code).toBe(0);
    const after = await daemon.ctx.store.getRun(run.id);
    expect(after).toMatchObject({ status: 'finished', step: 1 });
    const rollouts = (await daemon.ctx.store.listRollouts({ run_id: run.id })).items;
    expect(rollouts).toHaveLength(2);
    for (const r of rollouts) {
      expect(r.status).toBe('succeeded');
      expect(r.reward).toBeTypeOf('number');
      // The harness called the model through the proxy with the rollout's key.
      const calls = await daemon.ctx.store.listLlmCalls(r.id);
      expect(calls.length).toBeGreaterThan(0);
      expect(calls[0].response_ids?.length).toBeGreaterThan(0);
    }
  });

  it('fails the attempt of a harness that exits nonzero, with the tail of its stderr', async () => {
    // The command comes from the run config this time.
    const run = await createRun('failing command', {
      command: [
        process.execPath,
        '-e',
        'console.error("bad task: " + process.env.HARNESS_RL_TASK); process.exit(3)',
      ],
    });
    const code = await worker(['--run', run.id, '--url', daemon.url, '--token', daemon.token]);
    expect(code).toBe(0);
    const rollouts = (await daemon.ctx.store.listRollouts({ run_id: run.id })).items;
    expect(rollouts).toHaveLength(2);
    for (const r of rollouts) {
      expect(r.status).toBe('failed');
      const [attempt] = await daemon.ctx.store.listAttempts(r.id);
      expect(attempt.status).toBe('failed');
      expect(attempt.error).toContain('exit code 3');
      expect(attempt.error).toContain('bad task: {');
    }
  });

  it('says what is missing instead of starting', async () => {
    expect(await worker([])).toBe(2);
    expect(await worker(['--run', 'x', '--url', daemon.url, '--token', 'wrong'])).toBe(1);
  });
});
