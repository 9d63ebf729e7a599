// harness.workers.ray against a real Ray (ray[default] 2.60.0 from scripts/setup-ray.sh) on loopback:
// a head with the Jobs REST API and two one-CPU worker nodes, made the way Ray's own tests make a
// cluster (test/helpers/ray-cluster.py). A run trains through the Python workers the run submits as a
// Ray job, which holds the run's worker credential and not the daemon token; a run rewarded by its
// verifier has it run by the Python workers; a persistent harness runs one process per slot there; a
// node killed mid-rollout ends its attempts as node_lost (Ray reports the node dead) and the rollouts
// run again on the other node; stopping a run leaves no Ray job behind. The jobs import this checkout's
// workers/python (PYTHONPATH in their runtime_env).
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Run, RunWorkers } from '../../daemon/protocol/entities';
import { liveRayJobs, type RayJobInfo } from '../../daemon/worker/ray';
import { responseText } from '../../daemon/worker/verifier';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon';
import { PERSISTENT_CHAT_HARNESS } from '../helpers/persistent-harness';
import { alive, freePort } from '../helpers/process';
import { HELD_CHAT_HARNESS, harnessPids, runFinished } from '../helpers/runs';
import { waitFor } from '../helpers/wait';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

// The verifier: 10 + the length of the harness's final output; what it was given goes in the detail.
const VERIFY = `
import { readFileSync } from 'node:fs';
const input = JSON.parse(readFileSync(0, 'utf8'));
const e = process.env;
console.log(JSON.stringify({ reward: 10 + input.output.length, detail: {
  output: input.output, harness_reward: input.harness_reward, task: input.task,
  saw_stdout: input.stdout.includes('"reward"'),
  env: [e.HARNESS_RL_ROLLOUT_ID, e.HARNESS_RL_ATTEMPT_ID, e.HARNESS_RL_RUN_ID],
  credentials: [e.HARNESS_RL_WORKER_KEY ?? null, e.HARNESS_RL_TOKEN ?? null],
} }));
`;
const PYTHON = join(ROOT, '.cache/ray-venv/bin/python');
const haveRay = existsSync(PYTHON);

interface ClusterLine {
  dashboard?: string;
  nodes: string[];
  killed?: string;
}

class RayCluster {
  private lines: ClusterLine[] = [];
  private waiters: Array<(l: ClusterLine) => void> = [];
  constructor(readonly child: ChildProcess) {
    createInterface({ input: child.stdout! }).on('line', (line) => {
      const parsed = JSON.parse(line) as ClusterLine;
      const waiter = this.waiters.shift();
      if (waiter) waiter(parsed);
      else this.lines.push(parsed);
    });
  }
  next(ms = 180_000): Promise<ClusterLine> {
    const line = this.lines.shift();
    if (line) return Promise.resolve(line);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('the Ray cluster did not answer')), ms);
      this.waiters.push((l) => {
        clearTimeout(timer);
        resolve(l);
      });
    });
  }
  send(command: string) {
    this.child.stdin!.write(`${command}\n`);
  }
}

describe.skipIf(!haveRay)('harness.workers.ray on a real Ray cluster (loopback)', () => {
  let cluster: RayCluster;
  let dashboard: string;
  let daemon: TestDaemon;
  const dirs: string[] = [];

  beforeAll(async () => {
    const port = await freePort();
    const child = spawn(
      PYTHON,
      [join(ROOT, 'test/helpers/ray-cluster.py'), '--dashboard-port', String(port)],
      {
        stdio: ['pipe', 'pipe', 'inherit'],
        cwd: tmpdir(),
      },
    );
    cluster = new RayCluster(child);
    dashboard = (await cluster.next()).dashboard!;
    // Ray reports a killed node dead within a few seconds here (ray-cluster.py's health checks); the
    // heartbeat sweep waits longer, so the node's death is what ends its attempts.
    daemon = await startTestDaemon({
      cluster: { heartbeatSeconds: 1, heartbeatTimeoutMs: 30_000, sweepIntervalMs: 500 },
    });
  }, 240_000);

  afterAll(async () => {
    await daemon?.close();
    if (cluster) {
      cluster.child.stdin!.end();
      await new Promise((r) => cluster.child.once('exit', r));
    }
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  }, 120_000);

  function folder(): string {
    const dir = join(tmpdir(), `harness-rl-ray-${Math.random().toString(36).slice(2)}`);
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'harness.mjs'), HELD_CHAT_HARNESS);
    writeFileSync(join(dir, 'verify.mjs'), VERIFY);
    writeFileSync(join(dir, 'tasks.jsonl'), '{"q":"1+1"}\n{"q":"2+2"}\n');
    dirs.push(dir);
    return dir;
  }

  async function start(
    name: string,
    dir: string,
    ray: Record<string, unknown>,
    steps = 2,
    harness: Record<string, unknown> = {},
  ): Promise<Run> {
    const config = {
      name,
      tasks: { file: 'tasks.jsonl' },
      harness: {
        command: [process.execPath, 'harness.mjs'],
        concurrency: 2,
        timeout_s: 120,
        max_attempts: 2,
        workers: {
          ray: {
            address: dashboard,
            python: PYTHON,
            runtime_env: { env_vars: { PYTHONPATH: join(ROOT, 'workers/python') } },
            ...ray,
          },
        },
        ...harness,
      },
      algorithm: { n: 2, max_response_tokens: 3 },
      schedule: { steps, groups_per_step: 1 },
    };
    const res = await daemon.api<Run>('POST', '/api/runs', { config, base_dir: dir });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return res.body;
  }

  const finished = (id: string, ms = 180_000) => runFinished(daemon, id, ms);

  it('a run trains through Ray workers, streams their output back, and leaves no Ray job', async () => {
    const dir = folder();
    // The credentials the daemon issues, seen as the store hands them out (the store keeps their hash).
    const { store } = daemon.ctx;
    const issue = store.issueWorkerKey.bind(store);
    const issued: string[] = [];
    store.issueWorkerKey = async (id) => {
      const key = await issue(id);
      if (key) issued.push(key);
      return key;
    };
    // The harness says which of the worker's credentials it sees (none).
    const seen = ['HARNESS_RL_WORKER_KEY', 'HARNESS_RL_TOKEN'].map((k) => `\${${k}:-none}`).join(' ');
    const run = await start('through ray', dir, { workers: 2, resources_per_worker: { num_cpus: 0.5 } }, 2, {
      command: ['sh', '-c', `echo "credentials: ${seen}" >&2; exec "$0" harness.mjs`, process.execPath],
    });
    const after = await finished(run.id).finally(() => {
      store.issueWorkerKey = issue;
    });
    expect(after.step).toBe(2);
    const rollouts = (await daemon.ctx.store.listRollouts({ run_id: run.id })).items;
    expect(rollouts.every((r) => r.status === 'succeeded' && typeof r.reward === 'number')).toBe(true);
    const attempt = (await daemon.ctx.store.listAttempts(rollouts[0]!.id))[0]!;
    expect(attempt.worker).toMatch(/^ray:127\.0\.0\.1:[0-9a-f]{12}:w\d$/);
    const output = await daemon.api('GET', `/api/attempts/${attempt.id}/output`);
    expect(output.status).toBe(200);
    expect(output.body.output).toContain('harness on stderr');
    expect(output.body.output).toContain('"reward"');
    expect(output.body.output).toContain('credentials: none none');
    await waitFor(
      'the Ray job to end',
      async () => (await liveRayJobs(dashboard, run.id)).length === 0,
      60_000,
    );
    // The job holds the run's worker credential, never the daemon token (Ray's Jobs API redacts the
    // values of env_vars; the names say what the job got).
    const jobs = (await (await fetch(`${dashboard}/api/jobs/`)).json()) as RayJobInfo[];
    const job = jobs.find((j) => j.metadata?.harness_rl_run === run.id)!;
    expect(JSON.stringify(job)).not.toContain(daemon.token);
    const env = (job as unknown as { runtime_env: { env_vars: Record<string, string> } }).runtime_env
      .env_vars;
    expect(Object.keys(env).sort()).toEqual(['HARNESS_RL_WORKER_KEY', 'PYTHONPATH']);
    expect(issued).toHaveLength(1);
    const key = issued[0]!;
    expect(key).toMatch(/^hrw_/);
    // The run ended: its credential is refused, and it never opened the rest of the API.
    const claim = await daemon.api('POST', `/api/runs/${run.id}/claim`, { wait_ms: 0 }, key);
    expect(claim.status).toBe(401);
    expect((await daemon.api('GET', '/api/runs', undefined, key)).status).toBe(403);
  }, 300_000);

  it("a run rewarded by its verifier: the Python workers run it, and its reward counts (source 'verifier')", async () => {
    const dir = folder();
    const run = await start(
      'verified on ray',
      dir,
      { workers: 1, resources_per_worker: { num_cpus: 0.5 } },
      1,
      {
        reward: 'verifier',
        verifier: [process.execPath, 'verify.mjs'],
      },
    );
    await finished(run.id);
    const rollouts = (await daemon.ctx.store.listRollouts({ run_id: run.id })).items;
    expect(rollouts).toHaveLength(2);
    for (const r of rollouts) {
      const calls = await daemon.ctx.store.listLlmCalls(r.id);
      const output = responseText(calls.at(-1)!);
      const [attempt] = await daemon.ctx.store.listAttempts(r.id);
      expect(attempt!.worker).toMatch(/^ray:/);
      expect(r).toMatchObject({ status: 'succeeded', reward: 10 + output.length });
      expect(await daemon.ctx.store.listRewards(r.id)).toMatchObject([
        {
          source: 'verifier',
          value: 10 + output.length,
          detail: {
            output,
            harness_reward: output.length % 2,
            task: r.input,
            saw_stdout: true,
            env: [r.id, attempt!.id, run.id],
            credentials: [null, null],
          },
        },
      ]);
    }
  }, 300_000);

  it('a persistent harness (harness.mode: persistent) runs on the Ray workers: one process per slot, a crash mid-rollout fails as harness_crashed and is retried', async () => {
    const dir = folder();
    writeFileSync(join(dir, 'persistent.mjs'), PERSISTENT_CHAT_HARNESS);
    writeFileSync(join(dir, 'tasks.jsonl'), '{"q":"a","crash":true}\n{"q":"bb"}\n');
    const run = await start(
      'persistent on ray',
      dir,
      { workers: 1, resources_per_worker: { num_cpus: 0.5 } },
      1,
      {
        command: [process.execPath, 'persistent.mjs'],
        mode: 'persistent',
      },
    );
    const after = await finished(run.id);
    expect(after.step).toBe(1);
    const rollouts = (await daemon.ctx.store.listRollouts({ run_id: run.id })).items;
    expect(rollouts.every((r) => r.status === 'succeeded' && typeof r.reward === 'number')).toBe(true);
    const attempts = (await Promise.all(rollouts.map((r) => daemon.ctx.store.listAttempts(r.id)))).flat();
    expect(attempts.every((a) => a.worker?.startsWith('ray:'))).toBe(true);
    const crashed = attempts.filter((a) => a.failure);
    expect(crashed).toHaveLength(1);
    expect(crashed[0]).toMatchObject({ failure: { kind: 'infrastructure', reason: 'harness_crashed' } });
    expect(crashed[0]!.error).toContain('segfault, or so');
    // The worker took the rollouts over stdin (the harness refuses to run spawned): 2 slots and the
    // crashed process's successor, all ended with the run's Ray job.
    const pids = readdirSync(join(dir, 'pids')).map(Number);
    expect(pids).toHaveLength(3);
    await waitFor('the harness processes to end with the job', () => pids.every((p) => !alive(p)), 60_000);
  }, 300_000);

  it('a Ray node killed mid-rollout: its attempts end as node_lost (infrastructure) and the rollouts run again on the other node', async () => {
    const dir = folder();
    writeFileSync(join(dir, 'hold'), '');
    // One actor of a whole CPU: it sits on one of the two one-CPU nodes.
    const run = await start('node killed', dir, { workers: 1, resources_per_worker: { num_cpus: 1 } }, 1);
    const first = await waitFor(
      'two harnesses on one node',
      async () => {
        const rollouts = (await daemon.ctx.store.listRollouts({ run_id: run.id })).items;
        const attempts = (await Promise.all(rollouts.map((r) => daemon.ctx.store.listAttempts(r.id)))).flat();
        const running = attempts.filter((a) => a.status === 'running');
        return running.length === 2 && harnessPids(dir).length === 2 ? running : null;
      },
      120_000,
    );
    const node = first[0]!.worker!.split(':')[2]!;
    const pids = harnessPids(dir);
    cluster.send(`kill ${node}`);
    expect((await cluster.next()).killed).toMatch(new RegExp(`^${node}`));
    // The harnesses died with their worker (PR_SET_PDEATHSIG).
    await waitFor('the killed node’s harnesses gone', () => pids.every((p) => !alive(p)), 30_000);
    rmSync(join(dir, 'hold'));
    const after = await finished(run.id);
    expect(after.step).toBe(1);
    for (const a of first) {
      const attempts = await daemon.ctx.store.listAttempts(a.rollout_id);
      const lost = attempts.find((x) => x.id === a.id)!;
      // Ray reported its node dead: it ended as node_lost (retried, never a reward of 0), before the
      // heartbeat sweep would have called it a lost worker.
      expect([lost.status, lost.failure]).toEqual([
        'unresponsive',
        { kind: 'infrastructure', reason: 'node_lost' },
      ]);
      expect(lost.error).toMatch(new RegExp(`^its Ray node ${node}… died$`));
      const retry = attempts.find((x) => x.id !== a.id && x.status === 'succeeded')!;
      expect(retry.worker).toMatch(/^ray:/);
      expect(retry.worker!.split(':')[2]).not.toBe(node);
    }
    cluster.send('add'); // the next test has two nodes again
    await cluster.next();
  }, 300_000);

  it('stopping the run stops its Ray job and its harnesses: no Ray job is left', async () => {
    const dir = folder();
    writeFileSync(join(dir, 'hold'), '');
    const run = await start('stopped', dir, { workers: 2, resources_per_worker: { num_cpus: 0.5 } });
    const pids = await waitFor(
      'harness processes',
      () => (harnessPids(dir).length >= 2 ? harnessPids(dir) : null),
      120_000,
    );
    const workers = (await daemon.api<RunWorkers>('GET', `/api/runs/${run.id}/workers`)).body;
    expect(workers.mode).toBe('ray');
    expect(workers.ray?.status).toBe('RUNNING');
    expect(workers.workers.map((w) => w.name).every((n) => n.startsWith('ray:'))).toBe(true);
    const stopped = await daemon.api<Run>('POST', `/api/runs/${run.id}/stop`, {});
    expect(stopped.body.status).toBe('stopped');
    expect(await liveRayJobs(dashboard, run.id)).toEqual([]);
    await waitFor('the harnesses gone', () => pids.every((p) => !alive(p)), 30_000);
  }, 300_000);
});
