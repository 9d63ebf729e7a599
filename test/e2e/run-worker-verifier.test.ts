// `harness.reward: verifier`: after the harness of a rollout exits 0, `harness-rl worker` runs the run's
// verifier command on the task, the harness's final output and stdout; the reward it prints is the one
// that counts (source 'verifier'), over any the harness gave itself. A verifier that prints no reward,
// exits nonzero or runs too long fails the attempt with a clear error.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { run as worker } from '../../daemon/cli/commands/worker';
import { validateConfigText } from '../../daemon/config/load';
import type { Run } from '../../daemon/protocol/entities';
import { responseText, type VerifierInput } from '../../daemon/worker/verifier';
import { runWorker } from '../../daemon/worker/worker';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon';
import { alive } from '../helpers/process';

// The harness: one chat call through the proxy, a reward posted for itself, a reward line on stdout
// (and two refused attempts to get around the verifier).
const HARNESS = `
const task = JSON.parse(process.env.HARNESS_RL_TASK);
const res = await fetch(process.env.OPENAI_BASE_URL + '/chat/completions', {
  method: 'POST',
  headers: { authorization: 'Bearer ' + process.env.OPENAI_API_KEY, 'content-type': 'application/json' },
  body: JSON.stringify({ model: process.env.HARNESS_RL_MODEL, max_tokens: 3,
    messages: [{ role: 'user', content: 'What is ' + task.a + '+' + task.b + '?' }] }),
});
if (!res.ok) { console.error('llm call failed', res.status, await res.text()); process.exit(1); }
// In a verifier run the harness can neither pose as the verifier nor complete the rollout itself.
const api = (path, body) => fetch(process.env.HARNESS_RL_URL + '/api/rollouts/' + process.env.HARNESS_RL_ROLLOUT_ID + path, {
  method: 'POST',
  headers: { authorization: 'Bearer ' + process.env.HARNESS_RL_KEY, 'content-type': 'application/json' },
  body: JSON.stringify(body),
});
const posed = await api('/reward', { value: 99, source: 'verifier' });
if (posed.status !== 403) { console.error('a reward posed as the verifier was answered', posed.status); process.exit(1); }
const completed = await api('/complete', {});
if (completed.status !== 409) { console.error('a harness completing its rollout was answered', completed.status); process.exit(1); }
const own = await fetch(process.env.HARNESS_RL_URL + '/api/rollouts/' + process.env.HARNESS_RL_ROLLOUT_ID + '/reward', {
  method: 'POST',
  headers: { authorization: 'Bearer ' + process.env.HARNESS_RL_KEY, 'content-type': 'application/json' },
  body: JSON.stringify({ value: 0.25 }),
});
if (!own.ok) { console.error('reward post failed', own.status); process.exit(1); }
console.log('harness says hi to task ' + task.id);
console.log(JSON.stringify({ reward: 0.5 }));
`;

// The verifier: reads its input from stdin and reports what it saw; the reward is 1 + the task's a.
const VERIFY = `
import { readFileSync } from 'node:fs';
const input = JSON.parse(readFileSync(0, 'utf8'));
console.log('verifying', input.rollout_id);
console.log(JSON.stringify({ reward: 1 + input.task.a, detail: {
  output: input.output, harness_reward: input.harness_reward, task_id: input.task.id,
  saw_stdout: input.stdout.includes('harness says hi to task ' + input.task.id),
  env_rollout: process.env.HARNESS_RL_ROLLOUT_ID === input.rollout_id,
} }));
`;

describe('harness-rl worker with reward: verifier', () => {
  let daemon: TestDaemon;
  let dir: string;
  beforeAll(async () => {
    daemon = await startTestDaemon();
    dir = await mkdtemp(join(tmpdir(), 'harness-rl-verifier-'));
    await writeFile(join(dir, 'harness.mjs'), HARNESS);
    await writeFile(join(dir, 'verify.mjs'), VERIFY);
    await writeFile(
      join(dir, 'tasks.jsonl'),
      `${JSON.stringify({ id: 't1', a: 2, b: 3 })}\n${JSON.stringify({ id: 't2', a: 4, b: 1 })}\n`,
    );
  });
  afterAll(async () => {
    await daemon?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  async function createRun(name: string, harness: Record<string, unknown>): Promise<Run> {
    const config = {
      name,
      tasks: { file: 'tasks.jsonl', limit: 1 },
      harness: {
        workers: 'external',
        concurrency: 2,
        timeout_s: 120,
        max_attempts: 1,
        infrastructure_retries: 0,
        reward: 'verifier',
        ...harness,
      },
      algorithm: { n: 2 },
      schedule: { steps: 1, groups_per_step: 1 },
    };
    const res = await daemon.api<Run>('POST', '/api/runs', { config, base_dir: dir });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return res.body;
  }

  const work = (run: Run) =>
    worker(['--run', run.id, '--url', daemon.url, '--token', daemon.token, '--cwd', dir]);

  it("stores the verifier's reward (source verifier) over the harness's own, computed from the task, output and stdout", async () => {
    const run = await createRun('verified', {
      command: [process.execPath, 'harness.mjs'],
      verifier: [process.execPath, 'verify.mjs'],
    });
    expect(await work(run)).toBe(0);
    expect(await daemon.ctx.store.getRun(run.id)).toMatchObject({ status: 'finished', step: 1 });
    const rollouts = (await daemon.ctx.store.listRollouts({ run_id: run.id })).items;
    expect(rollouts).toHaveLength(2);
    for (const r of rollouts) {
      expect(r.status).toBe('succeeded');
      expect(r.reward).toBe(3); // 1 + a of task t1, not the harness's 0.25 or 0.5
      const rewards = await daemon.ctx.store.listRewards(r.id);
      // The harness's own post stays on record, the verifier's comes last and counts.
      expect(rewards.map((w) => [w.source, w.value])).toEqual([
        ['harness', 0.25],
        ['verifier', 3],
      ]);
      const calls = await daemon.ctx.store.listLlmCalls(r.id);
      expect(calls).toHaveLength(1);
      expect(rewards[1]!.detail).toEqual({
        output: responseText(calls[0]!),
        harness_reward: 0.5,
        task_id: 't1',
        saw_stdout: true,
        env_rollout: true,
      });
      expect(typeof (rewards[1]!.detail as { output: unknown }).output).toBe('string');
    }
  });

  it('fails the attempt of a verifier that prints no reward, or exits nonzero, instead of rewarding 0', async () => {
    const silent = await createRun('silent verifier', {
      command: [process.execPath, '-e', 'console.log(JSON.stringify({reward: 1}))'],
      verifier: [process.execPath, '-e', 'console.log("looks fine")'],
    });
    expect(await work(silent)).toBe(0);
    const crashing = await createRun('crashing verifier', {
      command: [process.execPath, '-e', ''],
      verifier: [process.execPath, '-e', 'console.error("pytest: 2 failed"); process.exit(2)'],
    });
    expect(await work(crashing)).toBe(0);
    for (const [run, message] of [
      [
        silent,
        'verifier failed: printed no reward: its last stdout line must be {"reward": x} or a number x, not "looks fine"',
      ],
      [crashing, 'verifier failed: exit code 2: pytest: 2 failed'],
    ] as const) {
      const rollouts = (await daemon.ctx.store.listRollouts({ run_id: run.id })).items;
      expect(rollouts).toHaveLength(2);
      for (const r of rollouts) {
        expect(r).toMatchObject({ status: 'failed', reward: null });
        expect(await daemon.ctx.store.listRewards(r.id)).toEqual([]);
        const attempts = await daemon.ctx.store.listAttempts(r.id);
        expect(attempts.map((a) => [a.status, a.error])).toEqual([['failed', message]]);
      }
    }
  });

  it('fails the attempt of a verifier that runs past harness.timeout_s, and stops it', async () => {
    const run = await createRun('slow verifier', {
      command: [process.execPath, '-e', ''],
      verifier: [
        process.execPath,
        '-e',
        'require("node:fs").writeFileSync("pid-" + process.env.HARNESS_RL_ROLLOUT_ID, String(process.pid)); setTimeout(() => console.log(1), 120_000)',
      ],
      timeout_s: 4,
    });
    expect(await work(run)).toBe(0);
    const rollouts = (await daemon.ctx.store.listRollouts({ run_id: run.id })).items;
    for (const r of rollouts) {
      expect(r.reward).toBeNull();
      const attempts = await daemon.ctx.store.listAttempts(r.id);
      expect(attempts.map((a) => [a.status, a.error])).toEqual([['failed', 'verifier timed out after 4s']]);
      // The verifier process was stopped (SIGTERM to its process group).
      const pid = Number(await readFile(join(dir, `pid-${r.id}`), 'utf8'));
      await expect.poll(() => alive(pid), { timeout: 10_000 }).toBe(false);
    }
  });

  it("takes the reward from an SDK worker's own verify function, given the output the harness returned", async () => {
    const run = await createRun('sdk verify', { verifier: [process.execPath, 'verify.mjs'] });
    const seen: VerifierInput[] = [];
    let n = 0;
    const summary = await runWorker({
      daemonUrl: daemon.url,
      token: daemon.token,
      runId: run.id,
      concurrency: 2,
      rollout: async () => ({ output: `answer ${n++}`, reward: 0.5 }),
      verify: async (input) => {
        seen.push(input);
        if (input.output === 'answer 1') throw new Error('judge model unreachable');
        return { reward: 0.75, detail: { judged: input.output } };
      },
    });
    expect(summary).toMatchObject({ succeeded: 1, failed: 1 });
    expect(seen.map((i) => [i.output, i.harness_reward, i.stdout, i.task]).sort()).toEqual([
      ['answer 0', 0.5, '', { id: 't1', a: 2, b: 3 }],
      ['answer 1', 0.5, '', { id: 't1', a: 2, b: 3 }],
    ]);
    const rollouts = (await daemon.ctx.store.listRollouts({ run_id: run.id })).items;
    const ok = rollouts.find((r) => r.status === 'succeeded')!;
    expect(ok.reward).toBe(0.75);
    expect(await daemon.ctx.store.listRewards(ok.id)).toMatchObject([
      { source: 'verifier', value: 0.75, detail: { judged: 'answer 0' } },
    ]);
    const bad = rollouts.find((r) => r.status === 'failed')!;
    const [attempt] = await daemon.ctx.store.listAttempts(bad.id);
    expect(attempt!.error).toBe('verifier failed: judge model unreachable');
  });

  it('fails a succeeded finish that carries no verifier reward (a worker that skipped the verifier)', async () => {
    const run = await createRun('skipped verifier', {
      command: [process.execPath, '-e', ''],
      verifier: [process.execPath, 'verify.mjs'],
    });
    const claim = await daemon.api('POST', `/api/runs/${run.id}/claim`, { wait_ms: 5000 });
    expect(claim.status).toBe(200);
    expect(claim.body).toMatchObject({ reward: 'verifier', verifier: [process.execPath, 'verify.mjs'] });
    const finish = await daemon.api('POST', `/api/attempts/${claim.body.attempt.id}/finish`, {
      status: 'succeeded',
      reward: 1,
      rollout_id: claim.body.rollout.id,
    });
    expect(finish.status).toBe(200);
    const [attempt] = await daemon.ctx.store.listAttempts(claim.body.rollout.id);
    expect(attempt!.status).toBe('failed');
    expect(attempt!.error).toContain('without a verifier reward');
    expect(await daemon.ctx.store.listRewards(claim.body.rollout.id)).toEqual([]);
    await daemon.api('POST', `/api/runs/${run.id}/stop`);
  });

  it('rejects reward: verifier without a verifier command, naming the field', async () => {
    const config = { name: 'no verifier', tasks: { file: 'tasks.jsonl' }, harness: { reward: 'verifier' } };
    const res = await daemon.api('POST', '/api/runs', { config, base_dir: dir });
    expect(res.status).toBe(400);
    expect(res.body.error.field).toBe('config.harness.verifier');
    expect(res.body.error.message).toContain('reward: verifier needs harness.verifier');

    const checked = validateConfigText(
      'run:\n  name: x\n  tasks:\n    file: t.jsonl\n  harness:\n    reward: verifier\n',
      'run.yaml',
    );
    expect(checked).toMatchObject({ ok: false, errors: [{ path: 'run.harness.verifier' }] });

    // A verifier that would silently not run is an error too.
    const unused = validateConfigText(
      'run:\n  name: x\n  tasks:\n    file: t.jsonl\n  harness:\n    verifier: [python, check.py]\n',
      'run.yaml',
    );
    expect(unused).toMatchObject({ ok: false, errors: [{ path: 'run.harness.reward' }] });
  });
});
