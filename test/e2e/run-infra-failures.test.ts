// Infrastructure failures are not zero rewards: a run whose harness fails every attempt ends failed,
// naming why; a harness killed at the deadline is retried as infrastructure and the run trains on;
// a harness that turns a backend error into reward 0 is not trained on; an incomplete group is trained
// on or dropped by the run's setting, and each step says how many rollouts it lost and why.
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCommand } from '../../daemon/cli/commands/run';
import type { Run } from '../../daemon/protocol/entities';
import { InfrastructureError, runWorker } from '../../daemon/worker/worker';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon';
import { waitFor } from '../helpers/wait';

// One chat call through the proxy; a failed call becomes reward 0 (as many harnesses do). The task's
// `hang` makes its first attempt hang (a marker file per task), `fail` makes every attempt exit 1,
// `flaky` every attempt but the first of the task's rollouts.
const HARNESS = `
import { existsSync, writeFileSync } from 'node:fs';
const task = JSON.parse(process.env.HARNESS_RL_TASK);
if (task.fail) { console.error('the harness gives up'); process.exit(1); }
if (task.flaky) {
  try { writeFileSync('flaky-' + task.q, '', { flag: 'wx' }); }
  catch { console.error('a sibling got here first'); process.exit(1); }
}
if (task.hang && !existsSync('hung-' + task.q)) {
  writeFileSync('hung-' + task.q, '');
  setInterval(() => {}, 1000);
} else {
  const res = await fetch(process.env.OPENAI_BASE_URL + '/chat/completions', {
    method: 'POST',
    headers: { authorization: 'Bearer ' + process.env.OPENAI_API_KEY, 'content-type': 'application/json' },
    body: JSON.stringify({ model: process.env.HARNESS_RL_MODEL, max_tokens: 3,
      messages: [{ role: 'user', content: task.q }] }),
  });
  if (!res.ok) { console.log(JSON.stringify({ reward: 0 })); }
  else {
    const text = (await res.json()).choices[0].message.content ?? '';
    console.log(JSON.stringify({ reward: text.length % 2 }));
  }
}
`;

function folder(tasks: unknown[]): string {
  const dir = join(tmpdir(), `harness-rl-infra-${Math.random().toString(36).slice(2)}`);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'harness.mjs'), HARNESS);
  writeFileSync(join(dir, 'tasks.jsonl'), `${tasks.map((t) => JSON.stringify(t)).join('\n')}\n`);
  return dir;
}

function config(name: string, patch: { harness?: object; algorithm?: object; inference?: object } = {}) {
  return {
    name,
    tasks: { file: 'tasks.jsonl' },
    harness: { command: [process.execPath, 'harness.mjs'], concurrency: 4, timeout_s: 60, ...patch.harness },
    algorithm: { n: 2, max_response_tokens: 3, ...patch.algorithm },
    schedule: { steps: 1, groups_per_step: 2 },
    ...(patch.inference ? { inference: patch.inference } : {}),
  };
}

const ended = (daemon: TestDaemon, id: string, ms = 60_000) =>
  waitFor(
    `run ${id} to end`,
    async () => {
      const run = await daemon.ctx.store.getRun(id);
      return run && ['finished', 'failed', 'stopped'].includes(run.status) ? run : null;
    },
    ms,
  );

describe('infrastructure failures are not zero rewards', () => {
  let daemon: TestDaemon;
  const dirs: string[] = [];
  beforeAll(async () => {
    daemon = await startTestDaemon({ cluster: { heartbeatSeconds: 1 } });
  });
  afterAll(async () => {
    await daemon?.close();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  async function start(tasks: unknown[], body: ReturnType<typeof config>): Promise<Run> {
    const dir = folder(tasks);
    dirs.push(dir);
    const res = await daemon.api<Run>('POST', '/api/runs', { config: body, base_dir: dir });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return ended(daemon, res.body.id);
  }

  it('a run whose harness fails every attempt (command: false) ends failed at model version 0, naming the reason', async () => {
    const run = await start([{ q: 'a' }], config('always false', { harness: { command: ['false'] } }));
    expect(run.status).toBe('failed');
    expect(run.model_version).toBe(0);
    expect(run.step).toBe(0);
    expect(run.error).toContain('step 0 has no rollout to train on');
    expect(run.error).toContain('harness: exit');
    expect(run.error).toContain('exit code 1');
    // It ran each rollout max_attempts times (2), no more: a harness failure is not retried as infrastructure.
    const rollouts = (await daemon.ctx.store.listRollouts({ run_id: run.id })).items;
    expect(rollouts.map((r) => [r.status, r.attempt_count, r.failure])).toEqual(
      rollouts.map(() => ['failed', 2, { kind: 'harness', reason: 'exit' }]),
    );
  });

  it('a harness killed at the deadline is retried as infrastructure, and the run trains on', async () => {
    const run = await start(
      [{ q: 'a', hang: true }, { q: 'b' }],
      config('deadline', { harness: { timeout_s: 4, max_attempts: 1 } }),
    );
    expect(run.status, run.error ?? '').toBe('finished');
    expect(run.model_version).toBe(1);
    const rollouts = (await daemon.ctx.store.listRollouts({ run_id: run.id })).items;
    expect(rollouts.every((r) => r.status === 'succeeded')).toBe(true);
    const retried = rollouts.filter((r) => r.attempt_count > 1);
    expect(retried.length).toBeGreaterThan(0);
    const first = (await daemon.ctx.store.listAttempts(retried[0]!.id))[0]!;
    expect(first).toMatchObject({
      status: 'timed_out',
      failure: { kind: 'infrastructure', reason: 'deadline' },
    });
    // Under load the other task's attempt can reach the deadline too: the step counts what the store holds.
    const attempts = (await Promise.all(rollouts.map((r) => daemon.ctx.store.listAttempts(r.id)))).flat();
    const infrastructure = attempts.filter((a) => a.failure?.kind === 'infrastructure').length;
    expect(infrastructure).toBeGreaterThanOrEqual(1);
    const [metrics] = await daemon.ctx.store.listRunMetrics(run.id);
    expect(metrics!.metrics).toMatchObject({
      lost_rollouts: 0,
      'failed_attempts.infrastructure': infrastructure,
    });
  });

  it('a harness that turns a backend error into reward 0 is not trained on: the run fails naming the backend', async () => {
    const backend: Server = createServer((req, res) => {
      req.resume();
      res.writeHead(500, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: 'the GPU fell off the bus', type: 'server_error' } }));
    });
    await new Promise<void>((r) => backend.listen(0, '127.0.0.1', r));
    try {
      const url = `http://127.0.0.1:${(backend.address() as AddressInfo).port}/v1`;
      const run = await start(
        [{ q: 'a' }],
        config('backend down', { harness: { infrastructure_retries: 1 }, inference: { endpoints: [url] } }),
      );
      expect(run.status).toBe('failed');
      expect(run.error).toContain('infrastructure: backend_error');
      expect(run.error).toContain('the GPU fell off the bus');
      const rollouts = (await daemon.ctx.store.listRollouts({ run_id: run.id })).items;
      // Each rollout: its first attempt and one retry, both failed at the backend; no reward 0 counted.
      expect(rollouts.map((r) => [r.status, r.attempt_count, r.failure?.reason])).toEqual(
        rollouts.map(() => ['failed', 2, 'backend_error']),
      );
      expect(await daemon.ctx.store.listRunMetrics(run.id)).toEqual([]);
    } finally {
      backend.close();
    }
  });

  it('a group that lost a rollout is trained on or dropped by algorithm.incomplete_groups, and the step says what it lost', async () => {
    // Of task a's two rollouts one fails every attempt (the one that finds the other's marker).
    const tasks = [{ q: 'a', flaky: true }, { q: 'b' }];
    const harness = { max_attempts: 1 };
    const trained = await start(tasks, config('incomplete: train', { harness }));
    expect(trained.status, trained.error ?? '').toBe('finished');
    const [t] = await daemon.ctx.store.listRunMetrics(trained.id);
    expect(t!.metrics).toMatchObject({
      lost_rollouts: 1,
      'lost_rollouts.harness': 1,
      'lost_rollouts.exit': 1,
      dropped_incomplete_groups: 0,
      samples: 3,
    });
    // `harness-rl run show` sums what the steps lost.
    const lines: string[] = [];
    const io = { out: (t: string) => lines.push(t), err: (t: string) => lines.push(t) };
    const show = ['show', trained.id, '--url', daemon.url, '--token', daemon.token, '--json'];
    expect(await runCommand(show, io)).toBe(0);
    expect(JSON.parse(lines.join('\n')).lost).toMatchObject({
      lost_rollouts: 1,
      'lost_rollouts.exit': 1,
      'failed_attempts.harness': 1,
    });

    const dropped = await start(
      tasks,
      config('incomplete: drop', { harness, algorithm: { incomplete_groups: 'drop' } }),
    );
    expect(dropped.status, dropped.error ?? '').toBe('finished');
    const [d] = await daemon.ctx.store.listRunMetrics(dropped.id);
    expect(d!.metrics).toMatchObject({ lost_rollouts: 1, dropped_incomplete_groups: 1, samples: 2 });
    const groups = (await daemon.ctx.store.listGroups(dropped.id)).items;
    expect(groups.map((g) => g.status).sort()).toEqual(['complete', 'failed']);
  });

  it('a worker that disappears mid-rollout (no heartbeat) loses its attempt as infrastructure: the rollout is queued again, its max_attempts untouched', async () => {
    const gone = await startTestDaemon({ cluster: { heartbeatTimeoutMs: 1000, sweepIntervalMs: 200 } });
    try {
      const dir = folder([{ q: 'a' }]);
      dirs.push(dir);
      const body = config('worker lost', { harness: { workers: 'external', max_attempts: 1 } });
      const created = await gone.api<Run>('POST', '/api/runs', { config: body, base_dir: dir });
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      // A worker claims a rollout, then its machine goes away: no heartbeat, no finish.
      const claim = await gone.api('POST', `/api/runs/${created.body.id}/claim`, {
        worker: 'w',
        wait_ms: 5000,
      });
      expect(claim.status).toBe(200);
      const rolloutId = claim.body.rollout.id as string;
      const requeued = await waitFor('the sweep to end the attempt', async () => {
        const r = await gone.ctx.store.getRollout(rolloutId);
        return r?.status === 'queued' && r.attempt_count === 1 ? r : null;
      });
      expect(requeued.failure).toEqual({ kind: 'infrastructure', reason: 'worker_lost' });
      const [attempt] = await gone.ctx.store.listAttempts(rolloutId);
      expect(attempt).toMatchObject({
        status: 'unresponsive',
        failure: { kind: 'infrastructure', reason: 'worker_lost' },
      });
      await gone.api('POST', `/api/runs/${created.body.id}/stop`);
    } finally {
      await gone.close();
    }
  });

  it('an SDK worker whose sandbox does not start (InfrastructureError) has the attempt retried, not failed', async () => {
    const dir = folder([{ q: 'a' }]);
    dirs.push(dir);
    const body = config('sdk sandbox', { harness: { workers: 'external', max_attempts: 1 } });
    delete (body.harness as { command?: string[] }).command;
    const created = await daemon.api<Run>('POST', '/api/runs', { config: body, base_dir: dir });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    let starts = 0;
    await runWorker({
      daemonUrl: daemon.url,
      token: daemon.token,
      runId: created.body.id,
      concurrency: 2,
      rollout: async (ctx) => {
        // The first sandbox fails to start; the rest run (one chat call, then the reward).
        if (starts++ === 0)
          throw new InfrastructureError('container runtime: no space left', 'sandbox_start');
        const res = await fetch(`${ctx.openai_base_url}/chat/completions`, {
          method: 'POST',
          headers: { authorization: `Bearer ${ctx.key}`, 'content-type': 'application/json' },
          body: JSON.stringify({
            model: ctx.model,
            max_tokens: 2,
            messages: [{ role: 'user', content: 'hi' }],
          }),
        });
        return { reward: res.ok ? 1 : 0 };
      },
    });
    const run = await ended(daemon, created.body.id);
    expect(run.status, run.error ?? '').toBe('finished');
    const rollouts = (await daemon.ctx.store.listRollouts({ run_id: run.id })).items;
    expect(rollouts.every((r) => r.status === 'succeeded')).toBe(true);
    const failed = [];
    for (const r of rollouts)
      failed.push(...(await daemon.ctx.store.listAttempts(r.id)).filter((a) => a.failure));
    expect(failed.map((a) => [a.status, a.error, a.failure])).toEqual([
      ['failed', 'container runtime: no space left', { kind: 'infrastructure', reason: 'sandbox_start' }],
    ]);
  });
});
