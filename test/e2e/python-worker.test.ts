// The Python worker of workers/python (what a Ray node runs) against a real daemon over TLS, the way a
// worker on another machine reaches it (a non-loopback daemon listens only with TLS, bind.ts): it
// trusts the daemon's self-signed certificate through --tls-ca and trains a run; without the CA it
// refuses the certificate and claims nothing. Its bodies are checked against the generated schema,
// which must match wire.ts.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Agent, fetch as undiciFetch } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { workerProtocolJsonSchema } from '../../daemon/cli/commands/schema';
import type { Run } from '../../daemon/protocol/entities';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon';
import { selfSignedCert } from '../helpers/tls';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const PYTHON = join(ROOT, '.cache/ray-venv/bin/python');

describe('the Python worker (workers/python)', () => {
  it('checks its bodies against the JSON Schema generated from wire.ts (run `npx tsx daemon/cli/main.ts schema --worker > workers/python/harness_rl_worker/protocol.schema.json` after changing wire.ts)', () => {
    const committed = JSON.parse(
      readFileSync(join(ROOT, 'workers/python/harness_rl_worker/protocol.schema.json'), 'utf8'),
    );
    expect(committed).toEqual(workerProtocolJsonSchema());
  });

  it("passes its own unit tests (workers/python/tests: the verifier's reward line, failures and stop)", () => {
    const r = spawnSync(
      existsSync(PYTHON) ? PYTHON : 'python3',
      ['-m', 'unittest', 'discover', '-s', join(ROOT, 'workers/python/tests')],
      {
        env: { ...process.env, PYTHONPATH: join(ROOT, 'workers/python') },
        encoding: 'utf8',
        timeout: 120_000,
      },
    );
    expect(r.status, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/^OK$/m);
  }, 150_000);
});

describe.skipIf(!existsSync(PYTHON))('the Python worker over TLS', () => {
  let daemon: TestDaemon;
  let dir: string;
  let cert: string;
  beforeAll(async () => {
    dir = join(tmpdir(), `harness-rl-pyworker-${Math.random().toString(36).slice(2)}`);
    mkdirSync(dir, { recursive: true });
    const pems = selfSignedCert(dir);
    cert = pems.cert;
    const key = pems.key;
    writeFileSync(join(dir, 'tasks.jsonl'), '{"q":"1+1"}\n');
    daemon = await startTestDaemon({
      tls: { cert: readFileSync(cert, 'utf8'), key: readFileSync(key, 'utf8') },
    });
  });
  afterAll(async () => {
    await daemon?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  // The test trusts the daemon's certificate as the worker does: by its CA.
  const api = (method: string, path: string, body: unknown) =>
    undiciFetch(`${daemon.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${daemon.token}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
      dispatcher: new Agent({ connect: { ca: readFileSync(cert, 'utf8') } }),
    });

  const worker = (runId: string, killAfterMs: number, ...more: string[]) =>
    new Promise<{ code: number | null; out: string }>((resolve) => {
      const child = spawn(
        PYTHON,
        ['-m', 'harness_rl_worker', '--url', daemon.url, '--run', runId, '--cwd', dir, ...more],
        {
          env: { ...process.env, PYTHONPATH: join(ROOT, 'workers/python'), HARNESS_RL_TOKEN: daemon.token },
          stdio: ['ignore', 'pipe', 'pipe'],
        },
      );
      let out = '';
      child.stdout.on('data', (c) => (out += c));
      child.stderr.on('data', (c) => (out += c));
      const timer = setTimeout(() => child.kill('SIGTERM'), killAfterMs);
      child.on('close', (code) => {
        clearTimeout(timer);
        resolve({ code, out });
      });
    });

  async function create(
    name: string,
    command = `echo "to stderr" >&2; echo '{"reward": 0.5}'`,
    harness: Record<string, unknown> = {},
  ): Promise<Run> {
    const config = {
      name,
      tasks: { file: 'tasks.jsonl' },
      harness: {
        command: ['sh', '-c', command],
        max_attempts: 1,
        workers: 'external',
        timeout_s: 30,
        ...harness,
      },
      algorithm: { n: 2, max_response_tokens: 3 },
      schedule: { steps: 1, groups_per_step: 1 },
    };
    const res = await api('POST', '/api/runs', { config, base_dir: dir });
    expect(res.status).toBe(201);
    return (await res.json()) as Run;
  }

  it('with --tls-ca it claims over https, runs the command, streams its output and posts the rewards', async () => {
    expect(daemon.url).toMatch(/^https:/);
    const run = await create('tls');
    const { out } = await worker(run.id, 60_000, '--tls-ca', cert, '--concurrency', '2');
    const rollouts = (await daemon.ctx.store.listRollouts({ run_id: run.id })).items;
    expect(
      rollouts.map((r) => [r.status, r.reward]),
      out,
    ).toEqual([
      ['succeeded', 0.5],
      ['succeeded', 0.5],
    ]);
    const attempt = (await daemon.ctx.store.listAttempts(rollouts[0]!.id))[0]!;
    expect(daemon.ctx.runs?.attemptOutput(attempt.id)?.output).toContain('to stderr');
  }, 120_000);

  it('a harness that exits nonzero fails its attempt with its exit code and output, not a reward', async () => {
    const run = await create('exit 3', 'echo boom >&2; exit 3');
    await worker(run.id, 60_000, '--tls-ca', cert, '--concurrency', '2');
    const rollouts = (await daemon.ctx.store.listRollouts({ run_id: run.id })).items;
    for (const r of rollouts) {
      expect(r.reward).toBeNull();
      const [attempt] = await daemon.ctx.store.listAttempts(r.id);
      expect([attempt!.status, attempt!.error]).toEqual(['failed', 'harness exit code 3: boom']);
    }
  }, 120_000);

  it('a verifier that exits nonzero, prints no reward or runs too long fails the attempt (harness: verifier, or the deadline), never a reward', async () => {
    const verifier = (code: string) => ({ reward: 'verifier', verifier: ['sh', '-c', code], timeout_s: 3 });
    const cases = [
      [
        verifier('echo "pytest: 2 failed" >&2; exit 2'),
        'verifier failed: exit code 2: pytest: 2 failed',
        'verifier',
      ],
      [
        verifier('echo looks fine'),
        'verifier failed: printed no reward: its last stdout line must be {"reward": x} or a number x, not "looks fine"',
        'verifier',
      ],
      [verifier('sleep 60'), 'verifier timed out after 3s', 'deadline'],
    ] as const;
    for (const [harness, error, reason] of cases) {
      const run = await create(`verifier ${reason}`, 'echo harness ran', harness);
      await worker(run.id, 20_000, '--tls-ca', cert, '--concurrency', '2');
      const rollouts = (await daemon.ctx.store.listRollouts({ run_id: run.id })).items;
      expect(rollouts).toHaveLength(2);
      for (const r of rollouts) {
        expect(r.reward).toBeNull();
        const [attempt] = await daemon.ctx.store.listAttempts(r.id);
        expect([attempt!.status, attempt!.error, attempt!.failure?.reason]).toEqual([
          'failed',
          error,
          reason,
        ]);
      }
    }
  }, 120_000);

  it('without the CA it refuses the self-signed certificate and claims nothing', async () => {
    const run = await create('no ca');
    const { out } = await worker(run.id, 4000);
    const rollouts = (await daemon.ctx.store.listRollouts({ run_id: run.id })).items;
    expect(rollouts.every((r) => r.status === 'queued')).toBe(true);
    await api('POST', `/api/runs/${run.id}/stop`, {});
    expect(out).toMatch(/CERTIFICATE_VERIFY_FAILED/);
  }, 120_000);
});
