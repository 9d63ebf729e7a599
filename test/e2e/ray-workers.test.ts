// harness.workers.ray against a real Ray (ray[default] 2.60.0 from scripts/setup-ray.sh) on loopback:
// a head with the Jobs REST API and two one-CPU worker nodes, made the way Ray's own tests make a
// cluster (test/helpers/ray-cluster.py). A run trains through the Python workers the run submits as a
// Ray job; a node killed mid-rollout ends its attempts (unresponsive) and the rollouts run again on the
// other node;
// stopping a run leaves no Ray job behind.
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Run, RunWorkers } from '../../daemon/protocol/entities';
import { liveRayJobs } from '../../daemon/worker/ray';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon';
import { alive, freePort } from '../helpers/process';
import { HELD_CHAT_HARNESS, harnessPids, runFinished } from '../helpers/runs';
import { waitFor } from '../helpers/wait';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
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
    // Attempts whose node died stop sending heartbeats: failed after 4 s here.
    daemon = await startTestDaemon({
      cluster: { heartbeatSeconds: 1, heartbeatTimeoutMs: 4000, sweepIntervalMs: 500 },
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
    writeFileSync(join(dir, 'tasks.jsonl'), '{"q":"1+1"}\n{"q":"2+2"}\n');
    dirs.push(dir);
    return dir;
  }

  async function start(name: string, dir: string, ray: Record<string, unknown>, steps = 2): Promise<Run> {
    const config = {
      name,
      tasks: { file: 'tasks.jsonl' },
      harness: {
        command: [process.execPath, 'harness.mjs'],
        concurrency: 2,
        timeout_s: 120,
        max_attempts: 2,
        workers: { ray: { address: dashboard, python: PYTHON, ...ray } },
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
    const run = await start('through ray', dir, { workers: 2, resources_per_worker: { num_cpus: 0.5 } });
    const after = await finished(run.id);
    expect(after.step).toBe(2);
    const rollouts = (await daemon.ctx.store.listRollouts({ run_id: run.id })).items;
    expect(rollouts.every((r) => r.status === 'succeeded' && typeof r.reward === 'number')).toBe(true);
    const attempt = (await daemon.ctx.store.listAttempts(rollouts[0]!.id))[0]!;
    expect(attempt.worker).toMatch(/^ray:127\.0\.0\.1:[0-9a-f]{12}:w\d$/);
    const output = await daemon.api('GET', `/api/attempts/${attempt.id}/output`);
    expect(output.status).toBe(200);
    expect(output.body.output).toContain('harness on stderr');
    expect(output.body.output).toContain('"reward"');
    await waitFor(
      'the Ray job to end',
      async () => (await liveRayJobs(dashboard, run.id)).length === 0,
      60_000,
    );
  }, 300_000);

  it('a Ray node killed mid-rollout: its attempts end unresponsive and the rollouts run again on the other node', async () => {
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
      // Its heartbeats stopped with the node: the sweep ends it as unresponsive (not a reward of 0).
      expect(lost.status).toBe('unresponsive');
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
