// A persistent harness (`harness.mode: persistent`): one process per concurrency slot takes the run's
// rollouts one after another over stdin, each answered by one stdout line; one that crashes while it
// holds a rollout is started again and that attempt fails as infrastructure (retried, never a reward);
// the run's stop ends the processes.
import { existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfigFile } from '../../daemon/config/load';
import type { Run } from '../../daemon/protocol/entities';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon';
import { exampleDir } from '../helpers/examples';
import { alive } from '../helpers/process';
import { waitFor } from '../helpers/wait';

// Serves rollouts from stdin: one chat call each, then {"rollout_id", "reward"}. Its pid in pids/; a
// task with `crash` kills the process the first time it sees it (a marker file per task), one with
// `silent` answers {"rollout_id"} without a reward the first time.
const HARNESS = `
import { mkdirSync, writeFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
if (process.env.HARNESS_RL_PERSISTENT !== '1') { console.error('not persistent'); process.exit(9); }
mkdirSync('pids', { recursive: true });
writeFileSync('pids/' + process.pid, '');
for await (const line of createInterface({ input: process.stdin })) {
  const { rollout_id, task, env, model } = JSON.parse(line);
  let first = false;
  try { if (task.crash) { writeFileSync('crashed-' + task.q, '', { flag: 'wx' }); first = true; } } catch {}
  if (first) { console.error('segfault, or so'); process.exit(139); }
  let silent = false;
  try { if (task.silent) { writeFileSync('silent-' + task.q, '', { flag: 'wx' }); silent = true; } } catch {}
  const res = await fetch(env.OPENAI_BASE_URL + '/chat/completions', {
    method: 'POST',
    headers: { authorization: 'Bearer ' + env.OPENAI_API_KEY, 'content-type': 'application/json' },
    body: JSON.stringify({ model, max_tokens: 3, messages: [{ role: 'user', content: task.q }] }),
  });
  const text = (await res.json()).choices[0].message.content ?? '';
  console.log('a log line of ' + rollout_id);
  console.log(JSON.stringify(silent ? { rollout_id } : { rollout_id, reward: text.length % 2 }));
}
`;

describe('a persistent harness', () => {
  let daemon: TestDaemon;
  const dirs: string[] = [];
  beforeAll(async () => {
    daemon = await startTestDaemon({ cluster: { heartbeatSeconds: 1 } });
  });
  afterAll(async () => {
    await daemon?.close();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  async function start(tasks: unknown[], steps: number): Promise<{ run: Run; dir: string }> {
    const dir = join(tmpdir(), `harness-rl-persistent-${Math.random().toString(36).slice(2)}`);
    mkdirSync(dir, { recursive: true });
    dirs.push(dir);
    writeFileSync(join(dir, 'harness.mjs'), HARNESS);
    writeFileSync(join(dir, 'tasks.jsonl'), `${tasks.map((t) => JSON.stringify(t)).join('\n')}\n`);
    const config = {
      name: 'persistent',
      tasks: { file: 'tasks.jsonl' },
      harness: { command: [process.execPath, 'harness.mjs'], mode: 'persistent', concurrency: 2 },
      algorithm: { n: 2, max_response_tokens: 3 },
      schedule: { steps, groups_per_step: 2 },
    };
    const res = await daemon.api<Run>('POST', '/api/runs', { config, base_dir: dir });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    const run = await waitFor(
      'the run to end',
      async () => {
        const r = await daemon.ctx.store.getRun(res.body.id);
        return r && ['finished', 'failed'].includes(r.status) ? r : null;
      },
      90_000,
    );
    return { run, dir };
  }

  it('takes rollouts one after another in as many processes as run at once, and ends them with the run', async () => {
    const { run, dir } = await start([{ q: 'a' }, { q: 'b' }], 3);
    expect(run.status, run.error ?? '').toBe('finished');
    expect(run.step).toBe(3);
    const rollouts = (await daemon.ctx.store.listRollouts({ run_id: run.id })).items;
    expect(rollouts).toHaveLength(12);
    expect(rollouts.every((r) => r.status === 'succeeded' && typeof r.reward === 'number')).toBe(true);
    // 12 rollouts, 2 processes (one per concurrency slot).
    const pids = readdirSync(join(dir, 'pids')).map(Number);
    expect(pids).toHaveLength(2);
    // Each attempt keeps its own output, not its neighbours'.
    const attempt = (await daemon.ctx.store.listAttempts(rollouts[0]!.id))[0]!;
    const output = (await daemon.api('GET', `/api/attempts/${attempt.id}/output`)).body.output as string;
    expect(output).toContain(`a log line of ${rollouts[0]!.id}`);
    expect(output).not.toMatch(new RegExp(`a log line of (?!${rollouts[0]!.id})`));
    await waitFor('the harness processes to end with the run', () => pids.every((p) => !alive(p)), 10_000);
  });

  it('a process that crashes is started again, and its rollout fails as infrastructure and is retried', async () => {
    const { run, dir } = await start([{ q: 'a', crash: true }, { q: 'b' }], 1);
    expect(run.status, run.error ?? '').toBe('finished');
    expect(existsSync(join(dir, 'crashed-a'))).toBe(true);
    const rollouts = (await daemon.ctx.store.listRollouts({ run_id: run.id })).items;
    expect(rollouts.every((r) => r.status === 'succeeded')).toBe(true);
    const crashed = [];
    for (const r of rollouts)
      crashed.push(...(await daemon.ctx.store.listAttempts(r.id)).filter((a) => a.failure));
    expect(crashed).toHaveLength(1);
    expect(crashed[0]).toMatchObject({
      status: 'failed',
      failure: { kind: 'infrastructure', reason: 'harness_crashed' },
    });
    expect(crashed[0]!.error).toContain('segfault, or so');
    expect(readdirSync(join(dir, 'pids'))).toHaveLength(3);
  });

  it('a rollout it answers without a reward fails, telling the user which line to print on stdout, and is retried', async () => {
    const { run } = await start([{ q: 'a', silent: true }, { q: 'b' }], 1);
    expect(run.status, run.error ?? '').toBe('finished');
    const failed = [];
    for (const r of (await daemon.ctx.store.listRollouts({ run_id: run.id })).items)
      failed.push(...(await daemon.ctx.store.listAttempts(r.id)).filter((a) => a.failure));
    expect(failed).toHaveLength(1);
    expect(failed[0]).toMatchObject({ status: 'failed', failure: { kind: 'harness', reason: 'no_reward' } });
    const id = failed[0]!.rollout_id;
    expect(failed[0]!.error).toBe(
      `persistent harness answered {"rollout_id": "${id}"} with no reward and posted none: the stdout line that ends the rollout must be {"rollout_id": "${id}", "reward": x} with x a finite number, or the harness posts the reward (POST /api/rollouts/${id}/reward) before that line`,
    );
  });

  it('the math example trains from its run.yaml with its persistent harness (node --import tsx, once per slot)', async () => {
    const { config } = await loadConfigFile(join(exampleDir('math-agent'), 'run.yaml'));
    // biome-ignore lint/suspicious/noExplicitAny: the test patches the config loosely
    const run = structuredClone(config.run) as Record<string, any>;
    expect(run.harness).toMatchObject({
      mode: 'persistent',
      command: ['node', '--import', 'tsx', 'main.ts'],
    });
    run.schedule.steps = 3;
    const res = await daemon.api<Run>('POST', '/api/runs', {
      config: run,
      base_dir: exampleDir('math-agent'),
    });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    const ended = await waitFor(
      'the math run to end',
      async () => {
        const r = await daemon.ctx.store.getRun(res.body.id);
        return r && ['finished', 'failed'].includes(r.status) ? r : null;
      },
      120_000,
    );
    expect(ended.status, ended.error ?? '').toBe('finished');
    expect(ended.model_version).toBe(3);
    const metrics = await daemon.ctx.store.listRunMetrics(ended.id);
    expect(metrics.map((m) => m.metrics.lost_rollouts)).toEqual([0, 0, 0]);
  }, 150_000);
});
