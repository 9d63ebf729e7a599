import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runRollout } from '../../examples/math-agent/agent';
import { loadConfigFile } from '../config/load';
import { type ReferenceEngine, startReferenceEngine } from './index';
import { buildBatch, learn, mergeCalls, startRecorder } from './learn';

const repo = join(import.meta.dirname, '..', '..');
const task = { id: 'add-3-4', a: 3, b: 4, op: '+', answer: 7 };

/** Runs a command without blocking this process's event loop (the engine serves from it). */
function run(
  args: string[],
  env: NodeJS.ProcessEnv,
): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('npx', args, { cwd: repo, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => {
      stdout += d;
    });
    child.stderr.on('data', (d) => {
      stderr += d;
    });
    child.on('error', reject);
    child.on('close', (status) => resolve({ status, stdout, stderr }));
  });
}

describe('the math agent against the reference engine', () => {
  let dataDir: string;
  let engine: ReferenceEngine;
  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'hrl-learn-test-'));
    engine = await startReferenceEngine({ dataDir, seed: 1 });
  });
  afterAll(async () => {
    await engine.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('runs two turns, resends the whole history token-exactly, and gets a reward in [0, 1]', async () => {
    const rec = await startRecorder(engine.url);
    try {
      const r = await runRollout({
        baseURL: rec.baseURL('r1'),
        apiKey: 'x',
        model: 'reference',
        task,
        seed: 3,
      });
      expect(r.turns).toBe(2);
      expect(r.reward).toBeGreaterThanOrEqual(0);
      expect(r.reward).toBeLessThanOrEqual(1);
      const calls = rec.take('r1');
      expect(calls).toHaveLength(2);
      const merged = mergeCalls(calls);
      // one sample unless the first answer's bytes were not valid UTF-8 (then the text cannot round-trip)
      expect(merged.length).toBeGreaterThanOrEqual(1);
      if (merged.length === 1) {
        expect(merged[0].mask.filter((m) => m === 1).length).toBe(
          calls[0].response_ids.length + calls[1].response_ids.length,
        );
      }
    } finally {
      await rec.close();
    }
  });

  it('main.ts prints {"reward": x} as its last stdout line', async () => {
    const out = await run(['tsx', 'examples/math-agent/main.ts'], {
      ...process.env,
      OPENAI_BASE_URL: engine.url,
      OPENAI_API_KEY: 'x',
      HARNESS_RL_MODEL: 'reference',
      HARNESS_RL_TASK: JSON.stringify(task),
    });
    expect(out.stderr).toMatch(/final answer/);
    expect(out.status).toBe(0);
    const last = out.stdout.trim().split('\n').at(-1)!;
    const reward = JSON.parse(last).reward;
    expect(typeof reward).toBe('number');
  }, 150_000);

  it('main.ts exits 2 with a message when the task is missing', async () => {
    const out = await run(['tsx', 'examples/math-agent/main.ts'], {
      ...process.env,
      OPENAI_BASE_URL: engine.url,
      HARNESS_RL_TASK: '',
    });
    expect(out.status).toBe(2);
    expect(out.stderr).toMatch(/HARNESS_RL_TASK/);
  }, 150_000);
});

describe('the example run config', () => {
  it('run.yaml is a valid config with a reference engine, GRPO and token-mean', async () => {
    const { config } = await loadConfigFile(join(repo, 'examples', 'math-agent', 'run.yaml'));
    expect(config.run?.model.name).toBe('reference');
    expect(config.run?.algorithm).toMatchObject({ n: 8, advantage: 'grpo', loss_agg: 'token-mean' });
    expect(config.run?.schedule.mode).toBe('sync');
  });
});

describe('GRPO batches', () => {
  it('merges calls by exact prefix and breaks where the next prompt does not extend the sequence', () => {
    const a = { prompt_ids: [1, 2], response_ids: [3], logprobs: [-0.5] };
    const b = { prompt_ids: [1, 2, 3, 4], response_ids: [5, 6], logprobs: [-0.1, -0.2] };
    const c = { prompt_ids: [9], response_ids: [8], logprobs: [-1] };
    const m = mergeCalls([a, b, c]);
    expect(m).toHaveLength(2);
    expect(m[0].ids).toEqual([1, 2, 3, 4, 5, 6]);
    expect(m[0].mask).toEqual([0, 0, 1, 0, 1, 1]);
    expect(m[0].old.filter((x) => !Number.isNaN(x))).toEqual([-0.5, -0.1, -0.2]);
    const batch = buildBatch([{ rewards: [1, 0], calls: [[a, b], [c]] }], 0, 0, 0.01);
    const T = 3 + 1;
    expect(batch.samples[0].loss_weights[2]).toBeCloseTo(1 / T, 12);
    expect(batch.samples[0].advantages[2]).toBeCloseTo(0.5 / (Math.SQRT1_2 + 1e-6), 6);
    expect(batch.samples[1].advantages[1]).toBeLessThan(0);
  });
});

describe('learnability', () => {
  it('GRPO through the HTTP API lifts the mean reward clearly above the frozen policy', async () => {
    const frozen = await learn({ seed: 1, steps: 3, groupsPerStep: 4, n: 8, lr: 0.02, train: false });
    const trained = await learn({ seed: 1, steps: 25, groupsPerStep: 4, n: 8, lr: 0.02, train: true });
    const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
    const base = mean(frozen.rewards);
    const last = mean(trained.rewards.slice(-5));
    expect(base).toBeLessThan(0.15);
    expect(last).toBeGreaterThan(base + 0.3);
  }, 600_000);
});
