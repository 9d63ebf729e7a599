// A persistent harness (`harness.mode: persistent`) run by the Python worker of workers/python (what a
// Ray node runs), outside Ray: one process per concurrency slot takes the run's rollouts over stdin, its
// other lines are each attempt's output, one that crashes mid-rollout is started again and that attempt
// fails as infrastructure (harness_crashed) and is retried, one that hangs past the deadline is killed,
// and a run's verifier still runs after each rollout.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Attempt, Run } from '../../daemon/protocol/entities';
import { noRewardText } from '../../daemon/worker/command';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon';
import { PERSISTENT_CHAT_HARNESS as HARNESS } from '../helpers/persistent-harness';
import { alive } from '../helpers/process';
import { waitFor } from '../helpers/wait';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const PYTHON = join(ROOT, '.cache/ray-venv/bin/python');

describe.skipIf(!existsSync(PYTHON))('a persistent harness on the Python worker', () => {
  let daemon: TestDaemon;
  const dirs: string[] = [];
  beforeAll(async () => {
    daemon = await startTestDaemon({ cluster: { heartbeatSeconds: 1 } });
  });
  afterAll(async () => {
    await daemon?.close();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  const worker = (runId: string, dir: string) =>
    new Promise<string>((resolve) => {
      const child = spawn(
        PYTHON,
        ['-m', 'harness_rl_worker', '--url', daemon.url, '--run', runId, '--cwd', dir, '--concurrency', '2'],
        {
          env: { ...process.env, PYTHONPATH: join(ROOT, 'workers/python'), HARNESS_RL_TOKEN: daemon.token },
          stdio: ['ignore', 'pipe', 'pipe'],
        },
      );
      let out = '';
      child.stdout.on('data', (c) => (out += c));
      child.stderr.on('data', (c) => (out += c));
      const timer = setTimeout(() => child.kill('SIGTERM'), 90_000);
      child.on('close', () => {
        clearTimeout(timer);
        resolve(out);
      });
    });

  async function train(tasks: unknown[], harness: Record<string, unknown> = {}) {
    const dir = join(tmpdir(), `harness-rl-pypersistent-${Math.random().toString(36).slice(2)}`);
    mkdirSync(dir, { recursive: true });
    dirs.push(dir);
    writeFileSync(join(dir, 'harness.mjs'), HARNESS);
    writeFileSync(join(dir, 'tasks.jsonl'), `${tasks.map((t) => JSON.stringify(t)).join('\n')}\n`);
    const config = {
      name: 'persistent on the python worker',
      tasks: { file: 'tasks.jsonl' },
      harness: {
        command: [process.execPath, 'harness.mjs'],
        mode: 'persistent',
        workers: 'external',
        ...harness,
      },
      algorithm: { n: 2, max_response_tokens: 3 },
      schedule: { steps: 1, groups_per_step: tasks.length },
    };
    const res = await daemon.api<Run>('POST', '/api/runs', { config, base_dir: dir });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    const out = await worker(res.body.id, dir);
    const run = (await daemon.ctx.store.getRun(res.body.id))!;
    const rollouts = (await daemon.ctx.store.listRollouts({ run_id: run.id })).items;
    const attempts: Attempt[] = [];
    for (const r of rollouts) attempts.push(...(await daemon.ctx.store.listAttempts(r.id)));
    const pids = readdirSync(join(dir, 'pids')).map(Number);
    return { run, rollouts, attempts, pids, dir, out };
  }

  it('takes the rewards from one process per slot, and a crash mid-rollout fails that attempt as harness_crashed and is retried', async () => {
    const { run, rollouts, attempts, pids, dir, out } = await train([{ q: 'a', crash: true }, { q: 'bb' }]);
    expect(run.status, `${run.error}\n${out}`).toBe('finished');
    expect(rollouts).toHaveLength(4);
    expect(rollouts.every((r) => r.status === 'succeeded' && typeof r.reward === 'number')).toBe(true);
    expect(existsSync(join(dir, 'crashed-a'))).toBe(true);
    const crashed = attempts.filter((a) => a.failure);
    expect(crashed).toHaveLength(1);
    expect(crashed[0]).toMatchObject({
      status: 'failed',
      failure: { kind: 'infrastructure', reason: 'harness_crashed' },
    });
    expect(crashed[0]!.error).toContain('segfault, or so');
    // 4 rollouts and a retry on 3 processes: one per slot, and the crashed one's successor.
    expect(pids).toHaveLength(3);
    // Each attempt's output is its own, streamed to the daemon.
    const ok = attempts.find((a) => a.status === 'succeeded')!;
    const output = daemon.ctx.runs?.attemptOutput(ok.id)?.output ?? '';
    expect(output).toContain(`a log line of ${ok.rollout_id}`);
    expect(output).not.toMatch(new RegExp(`a log line of (?!${ok.rollout_id})`));
    // The worker ended its processes when it left.
    await waitFor('the harness processes to end with the worker', () => pids.every((p) => !alive(p)), 10_000);
  }, 150_000);

  it('a rollout past its deadline kills its process: the attempt is timed out (infrastructure: deadline) and retried', async () => {
    const { run, rollouts, attempts, pids, dir, out } = await train([{ q: 'a', hang: true }], {
      timeout_s: 3,
    });
    expect(run.status, `${run.error}\n${out}`).toBe('finished');
    expect(rollouts.every((r) => r.status === 'succeeded')).toBe(true);
    const late = attempts.filter((a) => a.status === 'timed_out');
    expect(late).toHaveLength(1);
    expect(late[0]).toMatchObject({ error: 'timed out after 3s', failure: { reason: 'deadline' } });
    const hung = Number(readFileSync(join(dir, 'hung-pid'), 'utf8'));
    expect(pids).toContain(hung);
    expect(alive(hung)).toBe(false);
  }, 150_000);

  it('a rollout it answers without a reward fails, telling the user which line to print on stdout (as the daemon words it), and is retried', async () => {
    const { run, attempts, out } = await train([{ q: 'a', silent: true }]);
    expect(run.status, `${run.error}\n${out}`).toBe('finished');
    const failed = attempts.filter((a) => a.failure);
    expect(failed).toHaveLength(1);
    expect(failed[0]).toMatchObject({ status: 'failed', failure: { kind: 'harness', reason: 'no_reward' } });
    expect(failed[0]!.error).toBe(
      noRewardText({ mode: 'persistent', rolloutId: failed[0]!.rollout_id, stdout: '' }),
    );
  }, 150_000);

  it('a run rewarded by its verifier has it run after each persistent rollout, and its reward counts', async () => {
    const verify = `import json, sys; i = json.load(sys.stdin); print(json.dumps({"reward": 7, "detail": {"harness_reward": i["harness_reward"], "saw": "a log line of" in i["stdout"]}}))`;
    const { run, rollouts, out } = await train([{ q: 'a' }], {
      reward: 'verifier',
      verifier: [PYTHON, '-c', verify],
    });
    expect(run.status, `${run.error}\n${out}`).toBe('finished');
    expect(rollouts).toHaveLength(2);
    for (const r of rollouts) {
      expect(r).toMatchObject({ status: 'succeeded', reward: 7 });
      const [reward] = await daemon.ctx.store.listRewards(r.id);
      expect(reward).toMatchObject({ source: 'verifier', value: 7, detail: { saw: true } });
      expect(typeof (reward!.detail as { harness_reward: unknown }).harness_reward).toBe('number');
    }
  }, 150_000);
});
