// harness.sandbox: container, with Podman (Debian's, runc and cgroupfs where the cgroups are hybrid, per
// shared/notes/containers.md) and the local test image of scripts/setup-sandbox-image.sh. A harness in
// its container reaches the daemon's proxy and nothing else, cannot write the run's folder, and has the
// memory limit asked for; the coding-agent example trains in it; and the Python worker builds the same
// engine argv as the daemon. With harness.sandbox: bubblewrap the same example trains in bwrap. A
// persistent harness (harness.mode: persistent) runs in the sandbox too: one container (or bwrap) per
// process, taking rollouts over stdin, read-only, in a PID namespace, and gone with the run.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Run } from '../../daemon/protocol/entities';
import { ContainerSandbox } from '../../daemon/protocol/placement';
import { containerArgv } from '../../daemon/worker/sandbox';
import { bwrapWorks } from '../../examples/coding-agent/sandbox';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon';
import { exampleDir } from '../helpers/examples';
import { runFinished } from '../helpers/runs';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const IMAGE = 'localhost/harness-rl-sandbox:1';
const podman = spawnSync('podman', ['image', 'exists', IMAGE]).status === 0;
// Hybrid cgroups here: crun refuses, runc with cgroupfs runs (both configurable).
const engine = existsSync('/usr/sbin/runc') ? { runtime: '/usr/sbin/runc', cgroup_manager: 'cgroupfs' } : {};

// Tries what the sandbox must refuse, then one chat call through the proxy.
const HARNESS = `
import { readFileSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
const seen = {};
try { writeFileSync('written', 'x'); seen.write = 'wrote'; } catch (e) { seen.write = e.code; }
for (const f of ['/sys/fs/cgroup/memory/memory.limit_in_bytes', '/sys/fs/cgroup/memory.max'])
  try { seen.memory = readFileSync(f, 'utf8').trim(); break; } catch {}
seen.other = await new Promise((r) => {
  const s = connect(Number(process.env.OTHER_PORT ?? process.argv[2]), process.argv[3]);
  s.on('connect', () => { s.destroy(); r('connected'); });
  s.on('error', (e) => r(e.code));
  setTimeout(() => r('timeout'), 3000);
});
const res = await fetch(process.env.OPENAI_BASE_URL + '/chat/completions', {
  method: 'POST',
  headers: { authorization: 'Bearer ' + process.env.OPENAI_API_KEY, 'content-type': 'application/json' },
  body: JSON.stringify({ model: process.env.HARNESS_RL_MODEL, max_tokens: 3,
    messages: [{ role: 'user', content: process.env.HARNESS_RL_TASK }] }),
});
seen.proxy = res.status;
console.error('SEEN ' + JSON.stringify(seen));
console.log(JSON.stringify({ reward: res.ok ? 1 : 0 }));
`;

// A persistent harness that reports, per rollout, what it sees of its sandbox.
const PERSISTENT = `
import { readFileSync, writeFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
const boot = Math.random().toString(36).slice(2);
let write;
try { writeFileSync('written', 'x'); write = 'wrote'; } catch (e) { write = e.code; }
let memory = null;
for (const f of ['/sys/fs/cgroup/memory/memory.limit_in_bytes', '/sys/fs/cgroup/memory.max'])
  try { memory = readFileSync(f, 'utf8').trim(); break; } catch {}
for await (const line of createInterface({ input: process.stdin })) {
  const { rollout_id, task, env, model } = JSON.parse(line);
  const res = await fetch(env.OPENAI_BASE_URL + '/chat/completions', {
    method: 'POST',
    headers: { authorization: 'Bearer ' + env.OPENAI_API_KEY, 'content-type': 'application/json' },
    body: JSON.stringify({ model, max_tokens: 3, messages: [{ role: 'user', content: task.q }] }),
  });
  console.log('SEEN ' + JSON.stringify({ boot, write, memory, pid: process.pid, proxy: res.status }));
  console.log(JSON.stringify({ rollout_id, reward: res.ok ? 1 : 0 }));
}
`;

interface Seen {
  boot: string;
  write: string;
  memory: string | null;
  pid: number;
  proxy: number;
}

/** A persistent harness trained in `sandbox` (2 slots, 4 rollouts); what each rollout's process saw. */
async function trainPersistent(daemon: TestDaemon, dirs: string[], sandbox: unknown): Promise<Seen[]> {
  const dir = join(tmpdir(), `harness-rl-boxp-${Math.random().toString(36).slice(2)}`);
  mkdirSync(dir, { recursive: true });
  dirs.push(dir);
  writeFileSync(join(dir, 'harness.mjs'), PERSISTENT);
  writeFileSync(join(dir, 'tasks.jsonl'), '{"q":"1+1"}\n');
  const config = {
    name: 'persistent boxed',
    tasks: { file: 'tasks.jsonl' },
    harness: {
      command: ['node', 'harness.mjs'],
      mode: 'persistent',
      concurrency: 2,
      max_attempts: 1,
      sandbox,
    },
    algorithm: { n: 2, max_response_tokens: 3 },
    schedule: { steps: 2, groups_per_step: 1 },
  };
  const res = await daemon.api<Run>('POST', '/api/runs', { config, base_dir: dir });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  await runFinished(daemon, res.body.id, 240_000);
  const rollouts = (await daemon.ctx.store.listRollouts({ run_id: res.body.id })).items;
  expect(rollouts.map((r) => r.reward)).toEqual([1, 1, 1, 1]);
  expect(existsSync(join(dir, 'written'))).toBe(false);
  const seen: Seen[] = [];
  for (const r of rollouts) {
    const [attempt] = await daemon.ctx.store.listAttempts(r.id);
    const output = (await daemon.api('GET', `/api/attempts/${attempt!.id}/output`)).body.output as string;
    seen.push(JSON.parse(/SEEN (.*)/.exec(output)![1]!));
  }
  // Persistent: at most one process per slot served the 4 rollouts.
  expect(new Set(seen.map((s) => s.boot)).size).toBeLessThanOrEqual(2);
  return seen;
}

describe('the container sandbox: the same argv from the daemon and the Python worker', () => {
  it('containerArgv (TS) and container_argv (workers/python) agree', () => {
    const box = ContainerSandbox.parse({
      image: IMAGE,
      ...engine,
      cpus: 0.5,
      memory_mb: 300,
      mounts: ['/usr', '..'],
    });
    const input = {
      attemptId: 'att_01abc',
      argv: ['node', 'h.mjs'],
      cwd: '/srv/run',
      envKeys: ['OPENAI_BASE_URL', 'HARNESS_RL_TASK'],
      daemonUrl: 'https://daemon.example:8443',
      timeoutS: 60,
    };
    const py = execFileSync(
      'python3',
      [
        '-c',
        'import json,sys; from harness_rl_worker.sandbox import container_argv as c; a=json.load(sys.stdin); print(json.dumps(c(a["box"], *a["args"])))',
      ],
      {
        input: JSON.stringify({
          box,
          args: [input.attemptId, input.argv, input.cwd, input.envKeys, input.daemonUrl, input.timeoutS],
        }),
        env: { ...process.env, PYTHONPATH: join(ROOT, 'workers/python') },
        encoding: 'utf8',
      },
    );
    expect(JSON.parse(py)).toEqual(containerArgv(box, input));
    expect(containerArgv(box, input)).toContain('--add-host');
    // Docker's flags (its own --runtime place, the holder's network, no --timeout) agree too.
    const dockerBox = { ...box, engine: '/usr/bin/docker', runtime: 'runc' };
    const pyDocker = execFileSync(
      'python3',
      [
        '-c',
        'import json,sys; from harness_rl_worker.sandbox import container_argv as c; a=json.load(sys.stdin); print(json.dumps(c(a["box"], *a["args"])))',
      ],
      {
        input: JSON.stringify({
          box: dockerBox,
          args: [input.attemptId, input.argv, input.cwd, input.envKeys, input.daemonUrl, input.timeoutS],
        }),
        env: { ...process.env, PYTHONPATH: join(ROOT, 'workers/python') },
        encoding: 'utf8',
      },
    );
    expect(JSON.parse(pyDocker)).toEqual(containerArgv(dockerBox, input));
    expect(containerArgv(dockerBox, input)).toContain('container:hrl-att01abc-net');
  });
});

/**
 * The coding-agent example's run from its config `file`, patched by `patch`, cut to one step of one
 * group of two, trained to its end.
 */
async function trainCodingAgent(
  daemon: TestDaemon,
  file: string,
  // biome-ignore lint/suspicious/noExplicitAny: tests patch the config loosely
  patch: (run: Record<string, any>) => void,
): Promise<Run> {
  const { loadConfigFile } = await import('../../daemon/config/load');
  const { config } = await loadConfigFile(join(exampleDir('coding-agent'), file));
  // biome-ignore lint/suspicious/noExplicitAny: tests patch the config loosely
  const run = structuredClone(config.run) as Record<string, any>;
  patch(run);
  run.algorithm.n = 2;
  run.schedule = { ...run.schedule, steps: 1, groups_per_step: 1 };
  const res = await daemon.api<Run>('POST', '/api/runs', {
    config: run,
    base_dir: exampleDir('coding-agent'),
  });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return runFinished(daemon, res.body.id, 240_000);
}

describe.skipIf(!podman)('harness.sandbox: container (Podman)', () => {
  let daemon: TestDaemon;
  const dirs: string[] = [];
  beforeAll(async () => {
    daemon = await startTestDaemon();
  });
  afterAll(async () => {
    await daemon?.close();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  it('reaches the proxy only, cannot write the run folder, and has its memory limit', async () => {
    // A server on the host's loopback the harness must not reach.
    const other = createServer((s) => s.end('hi'));
    await new Promise<void>((r) => other.listen(0, '127.0.0.1', r));
    const otherPort = (other.address() as { port: number }).port;
    const dir = join(tmpdir(), `harness-rl-box-${Math.random().toString(36).slice(2)}`);
    mkdirSync(dir, { recursive: true });
    dirs.push(dir);
    writeFileSync(join(dir, 'harness.mjs'), HARNESS);
    writeFileSync(join(dir, 'tasks.jsonl'), '{"q":"1+1"}\n');
    const config = {
      name: 'boxed',
      tasks: { file: 'tasks.jsonl' },
      harness: {
        command: ['node', 'harness.mjs', String(otherPort), '127.0.0.1'],
        concurrency: 2,
        timeout_s: 120,
        max_attempts: 1,
        sandbox: { container: { image: IMAGE, ...engine, memory_mb: 300, cpus: 0.5, mounts: ['/usr'] } },
      },
      algorithm: { n: 2, max_response_tokens: 3 },
      schedule: { steps: 1, groups_per_step: 1 },
    };
    const res = await daemon.api<Run>('POST', '/api/runs', { config, base_dir: dir });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    try {
      await runFinished(daemon, res.body.id, 240_000);
    } finally {
      other.close();
    }
    const rollouts = (await daemon.ctx.store.listRollouts({ run_id: res.body.id })).items;
    expect(rollouts.map((r) => r.reward)).toEqual([1, 1]);
    const attempt = (await daemon.ctx.store.listAttempts(rollouts[0]!.id))[0]!;
    const output = (await daemon.api('GET', `/api/attempts/${attempt.id}/output`)).body.output as string;
    const seen = JSON.parse(/SEEN (.*)/.exec(output)![1]!);
    expect(seen).toEqual({
      write: 'EROFS',
      memory: String(300 * 1024 * 1024),
      other: 'ECONNREFUSED',
      proxy: 200,
    });
    expect(existsSync(join(dir, 'written'))).toBe(false);
    // Nothing left behind: no container, no namespace.
    expect(execFileSync('podman', ['ps', '-aq', '--filter', 'name=hrl-'], { encoding: 'utf8' }).trim()).toBe(
      '',
    );
    expect(execFileSync('ip', ['netns', 'list'], { encoding: 'utf8' })).not.toMatch(/hrl-/);
  }, 300_000);

  it('the coding-agent example trains with its harness in the container sandbox', async () => {
    const run = await trainCodingAgent(daemon, 'run.container.yaml', (cfg) => {
      // This checkout's node_modules may be a link out of the repository: mount where it points too.
      cfg.harness.sandbox.container.mounts.push(realpathSync(join(ROOT, 'node_modules')));
      Object.assign(cfg.harness.sandbox.container, engine);
    });
    const rollouts = (await daemon.ctx.store.listRollouts({ run_id: run.id })).items;
    for (const r of rollouts) {
      const attempts = await daemon.ctx.store.listAttempts(r.id);
      expect(attempts.map((a) => [a.status, a.error])).toEqual([['succeeded', null]]);
      expect((await daemon.ctx.store.listLlmCalls(r.id)).length).toBeGreaterThan(0);
      const [reward] = await daemon.ctx.store.listRewards(r.id);
      expect(reward).toMatchObject({ source: 'verifier', value: 1 / 3 });
    }
  }, 300_000);

  it('a persistent harness runs in a container of its own per process: read-only, its memory limit, the proxy reached', async () => {
    const box = { image: IMAGE, ...engine, memory_mb: 300, cpus: 0.5, mounts: ['/usr'] };
    const seen = await trainPersistent(daemon, dirs, { container: box });
    for (const s of seen)
      expect(s).toMatchObject({ write: 'EROFS', memory: String(300 * 1024 * 1024), proxy: 200 });
    // In its container's PID namespace.
    expect(seen.every((s) => s.pid < 10)).toBe(true);
    // Its containers and namespaces went with the run.
    expect(execFileSync('podman', ['ps', '-aq', '--filter', 'name=hrl-'], { encoding: 'utf8' }).trim()).toBe(
      '',
    );
    expect(execFileSync('ip', ['netns', 'list'], { encoding: 'utf8' })).not.toMatch(/hrl-/);
  }, 300_000);
});

describe.skipIf(!bwrapWorks().ok)('harness.sandbox: bubblewrap', () => {
  let daemon: TestDaemon;
  const dirs: string[] = [];
  beforeAll(async () => {
    daemon = await startTestDaemon();
  });
  afterAll(async () => {
    await daemon?.close();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  it('the coding-agent example trains with its harness in bubblewrap, which cannot write the example', async () => {
    const run = await trainCodingAgent(daemon, 'run.yaml', (cfg) => {
      cfg.harness.sandbox = 'bubblewrap';
      // The harness's first step, run in the sandbox: a write into the example's folder must fail.
      cfg.harness.command = ['sh', '-c', 'touch written 2>/dev/null && exit 9; exec npx tsx main.ts'];
    });
    const rollouts = (await daemon.ctx.store.listRollouts({ run_id: run.id })).items;
    for (const r of rollouts) {
      const attempts = await daemon.ctx.store.listAttempts(r.id);
      expect(attempts.map((a) => [a.status, a.error])).toEqual([['succeeded', null]]);
      const [reward] = await daemon.ctx.store.listRewards(r.id);
      expect(reward).toMatchObject({ source: 'verifier', value: 1 / 3 });
    }
    expect(existsSync(join(exampleDir('coding-agent'), 'written'))).toBe(false);
  }, 300_000);

  it('a persistent harness runs in bubblewrap: it cannot write its folder, in a PID namespace of its own', async () => {
    const seen = await trainPersistent(daemon, dirs, 'bubblewrap');
    for (const s of seen) expect(s).toMatchObject({ write: 'EROFS', proxy: 200 });
    expect(seen.every((s) => s.pid < 10)).toBe(true);
  }, 300_000);
});
