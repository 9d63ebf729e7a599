// Evaluations on real numbers: the evolve example's math harness and variants of it (no answer
// extraction, a retry on malformed answers, a shorter prompt) run through the daemon at a fixed model
// version of the reference engine (nothing trains), seeded; their comparison says which is better.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { evalCommand } from '../../daemon/cli/commands/eval';
import { loadConfigFile } from '../../daemon/config/load';
import type { ErrorBody } from '../../daemon/protocol/api';
import type { Run } from '../../daemon/protocol/entities';
import type { Comparison, Evaluation } from '../../daemon/protocol/evaluation';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon';
import { EXAMPLE, type Variant, writeVariant } from '../helpers/math-harness';
import { waitFor } from '../helpers/wait';

const dirs: string[] = [];
let daemon: TestDaemon;
let config: unknown;

// Before the baseline: the first try of every attempt exits 75 (EX_TEMPFAIL: the infrastructure failed
// around it; the rollout retries it on its own budget); tasks with a = 0 always throw (the harness's own).
const FLAKY = `import { existsSync, writeFileSync } from 'node:fs';
const flakyTask = JSON.parse(process.env.HARNESS_RL_TASK);
const mark = 'tried-' + flakyTask.id + '-' + process.env.HARNESS_RL_SEED;
if (!existsSync(mark)) { writeFileSync(mark, ''); process.exit(75); }
if (flakyTask.a === 0) throw new Error('no answer for zero');
`;

async function evaluate(
  variant: Variant,
  extra: Record<string, unknown> = {},
  prepend = '',
): Promise<Evaluation> {
  const dir = writeVariant(variant, mkdtempSync(join(tmpdir(), `harness-rl-${variant}-`)));
  dirs.push(dir);
  if (prepend) writeFileSync(join(dir, 'agent.mjs'), prepend + readFileSync(join(dir, 'agent.mjs'), 'utf8'));
  const res = await daemon.api<Evaluation>('POST', '/api/evaluations', {
    config,
    base_dir: EXAMPLE,
    harness_dir: dir,
    split: 'test',
    attempts: 2,
    seed: 7,
    ...extra,
  });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return waitFor(
    `evaluation of ${variant}`,
    async () => {
      const e = (await daemon.api<Evaluation>('GET', `/api/evaluations/${res.body.id}`)).body;
      return e.status === 'running' ? null : e;
    },
    240_000,
  );
}

beforeAll(async () => {
  daemon = await startTestDaemon();
  config = {
    ...(await loadConfigFile(join(EXAMPLE, 'eval.yaml'))).config.run,
    tasks: { file: '../math-agent/tasks.jsonl', test_fraction: 0.2 },
  };
});
afterAll(async () => {
  await daemon?.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe('evaluating harness variants at a fixed model version', () => {
  const results: Partial<Record<Variant, Evaluation>> = {};

  it('a baseline evaluation stores per-task rewards over k attempts, pass@k, an interval, tokens and wall time', async () => {
    const e = await evaluate('extract');
    results.extract = e;
    expect(e.status, e.error ?? '').toBe('finished');
    expect(e.model_version).toBe(0);
    const s = e.summary!;
    expect(s.tasks).toBe(22);
    expect(s.attempts).toBe(2);
    expect(s.scored).toBe(44);
    expect(e.tasks!.every((t) => t.rewards.length === 2 && t.calls === 1)).toBe(true);
    expect(s.ci_low!).toBeLessThanOrEqual(s.mean_reward!);
    expect(s.ci_high!).toBeGreaterThanOrEqual(s.mean_reward!);
    expect(s.policy_tokens_per_task!).toBeGreaterThan(100);
    expect(s.wall_s).toBeGreaterThan(0);
    // its run never trains: listed with the evaluation runs, not with the training ones
    const listed = async (kind: string) =>
      (await daemon.api<{ items: Run[] }>('GET', `/api/runs?kind=${kind}`)).body.items.map((r) => r.id);
    expect(await listed('evaluation')).toContain(e.run_id);
    expect(await listed('training')).not.toContain(e.run_id);
    const bad = await daemon.api<ErrorBody>('GET', '/api/runs?kind=eval');
    expect(bad.status).toBe(400);
    expect(bad.body.error.field).toBe('kind');
    console.log('extract', JSON.stringify(s));
  }, 240_000);

  it('the same seed gives the same per-task rewards', async () => {
    const again = await evaluate('extract');
    expect(again.tasks!.map((t) => t.rewards)).toEqual(results.extract!.tasks!.map((t) => t.rewards));
  }, 240_000);

  it('without answer extraction the score drops, a retry on malformed answers raises it, a shorter prompt uses fewer tokens', async () => {
    for (const v of ['raw', 'retry', 'short'] as const) {
      results[v] = await evaluate(v);
      expect(results[v]!.status, results[v]!.error ?? '').toBe('finished');
      console.log(v, JSON.stringify(results[v]!.summary));
    }
    const mean = (v: Variant) => results[v]!.summary!.mean_reward!;
    expect(mean('extract')).toBeGreaterThan(mean('raw'));
    expect(mean('retry')).toBeGreaterThan(mean('extract'));
    expect(results.retry!.summary!.calls_per_task!).toBeGreaterThan(1);
    expect(results.short!.summary!.prompt_tokens_per_task!).toBeLessThan(
      results.extract!.summary!.prompt_tokens_per_task! / 3,
    );
    const c = (
      await daemon.api<Comparison>(
        'GET',
        `/api/evaluations/compare?a=${results.extract!.id}&b=${results.retry!.id}`,
      )
    ).body;
    console.log('compare', JSON.stringify({ ...c, per_task: undefined }));
    expect(c.paired_tasks).toBe(22);
    expect(c.mean_diff!).toBeGreaterThan(0);
    expect(c.significant).toBe(true);
    expect(c.method).toMatch(/paired bootstrap/);
    expect(c.tokens.b_per_task!).toBeGreaterThan(c.tokens.a_per_task!);
    // The CLI says the same: `harness-rl eval compare A B` and `eval show ID`.
    const lines: string[] = [];
    const io = { out: (t: string) => lines.push(t), err: (t: string) => lines.push(t) };
    const auth = ['--url', daemon.url, '--token', daemon.token];
    expect(await evalCommand(['compare', results.extract!.id, results.retry!.id, ...auth], io)).toBe(0);
    expect(lines.join('\n')).toMatch(/22 paired tasks[\s\S]*significant[\s\S]*sign test: B better on \d+/);
    expect(await evalCommand(['show', results.retry!.id, ...auth], io)).toBe(0);
    expect(lines.join('\n')).toMatch(/pass@2 [\d.]+[\s\S]*policy tokens per task [\d.]+/);
  }, 600_000);
});

describe('failed attempts in an evaluation', () => {
  it('an infrastructure failure (exit 75) is retried and never scored; a harness that throws scores 0, both by reason', async () => {
    const e = await evaluate('extract', { attempts: 1 }, FLAKY);
    expect(e.status, e.error ?? '').toBe('finished');
    const s = e.summary!;
    expect(s.unscored_tasks).toBe(0);
    expect(s.scored).toBe(s.tasks);
    const infra = Object.entries(s.failures).filter(([r]) => r.startsWith('infrastructure'));
    expect(infra.reduce((n, [, c]) => n + c, 0)).toBe(s.tasks);
    expect(s.infrastructure_retries).toBe(s.tasks);
    const zeros = e.tasks!.filter((t) => t.failures.some((f) => f.kind === 'harness'));
    expect(zeros.length).toBeGreaterThan(0);
    for (const t of zeros) {
      expect(t.rewards).toEqual([0]);
      expect(t.failures.find((f) => f.kind === 'harness')!.reason).toMatch(/no answer for zero/);
    }
    // Every other task was scored by the verifier after its retry, none as 0 for the lost try.
    expect(e.tasks!.filter((t) => !zeros.includes(t)).every((t) => t.rollouts.length === 1)).toBe(true);
  }, 240_000);
});

describe('what the evaluation and evolution routes refuse', () => {
  it('a split the tasks do not have, an unknown evaluation, a config without an evolve block: 4xx naming the field', async () => {
    const noTest = { ...(config as object), tasks: { file: '../math-agent/tasks.jsonl' } };
    const split = await daemon.api('POST', '/api/evaluations', {
      config: noTest,
      base_dir: EXAMPLE,
      split: 'test',
    });
    expect(split.status).toBe(400);
    expect(split.body.error.field).toBe('split');
    const attempts = await daemon.api('POST', '/api/evaluations', { config, base_dir: EXAMPLE, attempts: 0 });
    expect(attempts.status).toBe(400);
    expect(attempts.body.error.field).toBe('attempts');
    const unknown = await daemon.api(
      'GET',
      '/api/evaluations/compare?a=ev_01m970vrnk2ghmwktge5pj&b=ev_01m970vrnk2ghmwktge5pk',
    );
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.field).toBe('a');
    const evolve = await daemon.api('POST', '/api/evolutions', { config, base_dir: EXAMPLE });
    expect(evolve.status).toBe(400);
    expect(evolve.body.error.field).toBe('config.evolve');
  });
});
