// Ray-hosted rollouts against one daemon: a Ray cluster on loopback (test/helpers/ray-cluster.py, one
// worker node), a run with harness.workers.ray of 4 actors × 64 slots = 256 concurrent rollouts of a
// trivial harness (`sh -c 'echo {"reward": 1}'`, no LLM call), and the daemon in this process.
//   ray.rollouts  claims/s over 256 × BENCH_RAY_ROUNDS rollouts (claim → harness → finish, all through
//                 the worker protocol), and the daemon's CPU per rollout (this process's CPU time over
//                 the same window: routes, store, heartbeats, output streams)
// Needs scripts/setup-ray.sh (.cache/ray-venv); prints a skip line without it.
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { startDaemon } from '../daemon/daemon';
import { emit, root, round } from './emit';

type Daemon = Awaited<ReturnType<typeof startDaemon>>;

const PYTHON = join(root, '.cache/ray-venv/bin/python');

/** A Ray cluster on loopback (one worker node, 4 CPUs); resolves with it and its dashboard address. */
async function startRay(): Promise<{ cluster: ChildProcess; dashboard: string }> {
  const cluster = spawn(
    PYTHON,
    [join(root, 'test/helpers/ray-cluster.py'), '--dashboard-port', '0', '--nodes', '1', '--cpus', '4'],
    {
      stdio: ['pipe', 'pipe', 'inherit'],
      cwd: tmpdir(),
    },
  );
  const first = await new Promise<{ dashboard: string }>((resolve, reject) => {
    createInterface({ input: cluster.stdout! }).once('line', (l) => resolve(JSON.parse(l)));
    cluster.once('exit', () => reject(new Error('the Ray cluster did not start')));
  });
  return { cluster, dashboard: first.dashboard };
}

/** The run: `rounds` steps of 16 groups × 16 rollouts, a trivial harness on 4 Ray actors × 64 slots. */
const rayRun = (dashboard: string, rounds: number) => ({
  name: 'ray bench',
  tasks: { file: 'tasks.jsonl' },
  harness: {
    command: ['sh', '-c', `echo '{"reward": 1}'`],
    concurrency: 64,
    timeout_s: 300,
    workers: {
      ray: {
        address: dashboard,
        python: PYTHON,
        workers: 4,
        resources_per_worker: { num_cpus: 0.5 },
        // This checkout's worker package (the venv's may be installed from another checkout).
        runtime_env: { env_vars: { PYTHONPATH: join(root, 'workers/python') } },
      },
    },
  },
  algorithm: { n: 16, max_response_tokens: 1 },
  schedule: { steps: rounds, groups_per_step: 16 },
});

/**
 * Waits for the run's rollouts to finish (256 × `rounds`, or 10 minutes) and emits ray.rollouts over
 * the window from its first finished rollout (the actors are up), so start-up is not counted.
 */
async function measureRollouts(daemon: Daemon, runId: string, rounds: number): Promise<void> {
  const done = async () =>
    (await daemon.ctx.store.listRollouts({ run_id: runId, limit: 10_000 })).items.filter(
      (r) => r.status === 'succeeded' || r.status === 'failed',
    ).length;
  while ((await done()) === 0) await new Promise((r) => setTimeout(r, 100));
  const startDone = await done();
  const t0 = performance.now();
  const cpu0 = process.cpuUsage();
  const target = 256 * rounds;
  let finished = startDone;
  while (finished < target && performance.now() - t0 < 600_000) {
    await new Promise((r) => setTimeout(r, 250));
    finished = await done();
  }
  const seconds = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  const rollouts = finished - startDone;
  emit('ray.rollouts', {
    concurrent: 256,
    rollouts,
    claims_per_s: round(rollouts / seconds, 1),
    daemon_cpu_ms_per_rollout: round((cpu.user + cpu.system) / 1000 / Math.max(1, rollouts), 2),
    load: round(loadavg()[0]!, 1),
  });
}

export default async function main(): Promise<void> {
  if (!existsSync(PYTHON)) {
    emit('ray.rollouts', { skipped: 'no .cache/ray-venv: run scripts/setup-ray.sh' });
    return;
  }
  const rounds = Number(process.env.BENCH_RAY_ROUNDS ?? 1);
  const { cluster, dashboard } = await startRay();
  const dir = mkdtempSync(join(tmpdir(), 'harness-rl-bench-ray-'));
  writeFileSync(join(dir, 'tasks.jsonl'), Array.from({ length: 16 }, (_, i) => `{"i":${i}}\n`).join(''));
  const daemon = await startDaemon({
    dataDir: dir,
    port: 0,
    token: 'bench-token',
    log: () => {},
    cluster: { heartbeatSeconds: 5 },
  });
  const headers = { authorization: 'Bearer bench-token', 'content-type': 'application/json' };
  try {
    const res = await fetch(`${daemon.url}/api/runs`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ config: rayRun(dashboard, rounds), base_dir: dir }),
    });
    const run = (await res.json()) as { id: string };
    await measureRollouts(daemon, run.id, rounds);
    await fetch(`${daemon.url}/api/runs/${run.id}/stop`, { method: 'POST', headers, body: '{}' });
  } finally {
    await daemon.close();
    cluster.stdin!.end();
    await new Promise((r) => cluster.once('exit', r));
    rmSync(dir, { recursive: true, force: true });
  }
}
