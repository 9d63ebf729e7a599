// harness.sandbox: container with `engine: docker` (Debian's docker.io, a dockerd started by hand here;
// skipped where none answers or the test image is not loaded: scripts/setup-sandbox-image.sh loads it).
// Docker cannot join a network namespace by path, so an attempt's namespace is held by a second
// container (the host's busybox sleeping) that the harness's container joins; the forward to the proxy
// is attached to it. The harness reaches the proxy and nothing else, cannot write its folder, has its
// memory limit, is killed at the container's timeout_s (Docker has no --timeout), and nothing is left.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Run } from '../../daemon/protocol/entities';
import { ContainerSandbox } from '../../daemon/protocol/placement';
import { containerArgv } from '../../daemon/worker/sandbox';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon';
import { waitFor } from '../helpers/wait';

const IMAGE = 'localhost/harness-rl-sandbox:1';
const docker = spawnSync('docker', ['image', 'inspect', IMAGE], { stdio: 'ignore' }).status === 0;

// Per rollout (persistent: one process serves several): what it sees of its sandbox, then a chat call.
const HARNESS = `
import { readFileSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { createInterface } from 'node:readline';
const boot = Math.random().toString(36).slice(2);
console.error('STARTED');
const seen = { pid: process.pid };
try { writeFileSync('written', 'x'); seen.write = 'wrote'; } catch (e) { seen.write = e.code; }
for (const f of ['/sys/fs/cgroup/memory/memory.limit_in_bytes', '/sys/fs/cgroup/memory.max'])
  try { seen.memory = readFileSync(f, 'utf8').trim(); break; } catch {}
seen.other = await new Promise((r) => {
  const s = connect(Number(process.argv[2]), '127.0.0.1');
  s.on('connect', () => { s.destroy(); r('connected'); });
  s.on('error', (e) => r(e.code));
  setTimeout(() => r('timeout'), 3000);
});
async function rollout(env, model, task) {
  if (task.sleep) await new Promise((r) => setTimeout(r, task.sleep * 1000));
  const res = await fetch(env.OPENAI_BASE_URL + '/chat/completions', {
    method: 'POST',
    headers: { authorization: 'Bearer ' + env.OPENAI_API_KEY, 'content-type': 'application/json' },
    body: JSON.stringify({ model, max_tokens: 3, messages: [{ role: 'user', content: task.q }] }),
  });
  console.log('SEEN ' + JSON.stringify({ ...seen, boot, proxy: res.status }));
  return res.ok ? 1 : 0;
}
if (process.env.HARNESS_RL_PERSISTENT === '1') {
  for await (const line of createInterface({ input: process.stdin })) {
    const { rollout_id, task, env, model } = JSON.parse(line);
    console.log(JSON.stringify({ rollout_id, reward: await rollout(env, model, task) }));
  }
} else {
  const task = JSON.parse(process.env.HARNESS_RL_TASK);
  console.log(JSON.stringify({ reward: await rollout(process.env, process.env.HARNESS_RL_MODEL, task) }));
}
`;

describe('containerArgv for Docker', () => {
  it('puts --runtime after run, has no --cgroup-manager or --timeout, and joins the holder’s network', () => {
    const box = ContainerSandbox.parse({
      image: IMAGE,
      engine: 'docker',
      runtime: 'runc',
      cgroup_manager: 'cgroupfs',
    });
    const argv = containerArgv(box, {
      attemptId: 'att_01abc',
      argv: ['node', 'h.mjs'],
      cwd: '/srv/run',
      envKeys: ['OPENAI_BASE_URL'],
      daemonUrl: 'https://daemon.example:8443',
      timeoutS: 60,
    });
    expect(argv.slice(0, 10)).toEqual([
      'docker',
      'run',
      '--rm',
      '--pull',
      'never',
      '--name',
      'hrl-att01abc',
      '--network',
      'container:hrl-att01abc-net',
      '--runtime',
    ]);
    expect(argv).not.toContain('--timeout');
    expect(argv).not.toContain('--cgroup-manager');
    expect(argv).not.toContain('--add-host'); // the holder has it
  });
});

describe.skipIf(!docker)('harness.sandbox: container (Docker)', () => {
  let daemon: TestDaemon;
  const dirs: string[] = [];
  let other: ReturnType<typeof createServer>;
  let otherPort: number;
  beforeAll(async () => {
    daemon = await startTestDaemon();
    // A server on the host's loopback the harness must not reach.
    other = createServer((s) => s.end('hi'));
    await new Promise<void>((r) => other.listen(0, '127.0.0.1', r));
    otherPort = (other.address() as { port: number }).port;
  });
  afterAll(async () => {
    other?.close();
    await daemon?.close();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  const leftovers = () =>
    execFileSync('docker', ['ps', '-aq', '--filter', 'name=hrl-'], { encoding: 'utf8' }).trim();

  async function train(harness: Record<string, unknown>, tasks: unknown[], steps = 1) {
    const dir = join(tmpdir(), `harness-rl-docker-${Math.random().toString(36).slice(2)}`);
    mkdirSync(dir, { recursive: true });
    dirs.push(dir);
    writeFileSync(join(dir, 'harness.mjs'), HARNESS);
    writeFileSync(join(dir, 'tasks.jsonl'), `${tasks.map((t) => JSON.stringify(t)).join('\n')}\n`);
    const box = { image: IMAGE, engine: 'docker', memory_mb: 300, cpus: 0.5, mounts: ['/usr'] };
    const config = {
      name: 'docker',
      tasks: { file: 'tasks.jsonl' },
      harness: {
        command: ['node', 'harness.mjs', String(otherPort)],
        concurrency: 2,
        timeout_s: 120,
        max_attempts: 1,
        infrastructure_retries: 0,
        ...harness,
        sandbox: { container: { ...box, ...(harness.box as object) } },
      },
      algorithm: { n: 2, max_response_tokens: 3 },
      schedule: { steps, groups_per_step: 1 },
    };
    delete (config.harness as Record<string, unknown>).box;
    const res = await daemon.api<Run>('POST', '/api/runs', { config, base_dir: dir });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    const run = await waitFor(
      'the run to end',
      async () => {
        const r = await daemon.ctx.store.getRun(res.body.id);
        return r && ['finished', 'failed'].includes(r.status) ? r : null;
      },
      240_000,
    );
    const rollouts = (await daemon.ctx.store.listRollouts({ run_id: run.id })).items;
    const seen = [];
    for (const r of rollouts) {
      const [attempt] = await daemon.ctx.store.listAttempts(r.id);
      const output = (await daemon.api('GET', `/api/attempts/${attempt!.id}/output`)).body?.output ?? '';
      const line = /SEEN (.*)/.exec(output);
      seen.push({ rollout: r, attempt: attempt!, output, seen: line ? JSON.parse(line[1]!) : null });
    }
    expect(existsSync(join(dir, 'written'))).toBe(false);
    return { run, seen };
  }

  it('reaches the proxy only, cannot write the run folder, has its memory limit, and leaves nothing', async () => {
    const { run, seen } = await train({}, [{ q: '1+1' }]);
    expect(run.status, run.error ?? '').toBe('finished');
    for (const s of seen) {
      expect(s.rollout.reward).toBe(1);
      expect(s.seen).toMatchObject({
        write: 'EROFS',
        memory: String(300 * 1024 * 1024),
        other: 'ECONNREFUSED',
        proxy: 200,
      });
    }
    expect(leftovers()).toBe('');
    expect(execFileSync('ip', ['netns', 'list'], { encoding: 'utf8' })).not.toMatch(/hrl-/);
  }, 300_000);

  it('a persistent harness runs in a Docker container of its own per process', async () => {
    const { run, seen } = await train({ mode: 'persistent' }, [{ q: '1+1' }], 2);
    expect(run.status, run.error ?? '').toBe('finished');
    expect(seen).toHaveLength(4);
    for (const s of seen) expect(s.seen).toMatchObject({ write: 'EROFS', other: 'ECONNREFUSED', proxy: 200 });
    expect(new Set(seen.map((s) => s.seen.boot)).size).toBeLessThanOrEqual(2);
    await waitFor('the containers gone with the run', () => leftovers() === '', 30_000);
  }, 300_000);

  it('a container past its timeout_s is killed (Docker has no --timeout): the attempt fails, nothing is left', async () => {
    const started = Date.now();
    const { seen } = await train({ box: { timeout_s: 3 } }, [{ q: '1+1', sleep: 60 }]);
    expect(Date.now() - started).toBeLessThan(45_000);
    for (const s of seen) {
      expect(s.rollout.reward).toBeNull();
      // It ran, and was killed: its sandbox had started.
      expect(s.output).toContain('STARTED');
      expect(s.attempt.status).toBe('failed');
      expect(s.attempt.failure?.reason).not.toBe('sandbox_start');
      expect(s.attempt.error).toMatch(/exit code 137/);
    }
    expect(leftovers()).toBe('');
  }, 300_000);
});
