// `harness-rl node` as a process: the token file, usage errors, and --vllm-cmd — the agent starts the
// backend, tunnels requests to it, and restarts it when it dies; and the daemon's tunnel to a silent node.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NodeConnection } from '../../daemon/cluster/nodes/connection';
import { NodeTunnel } from '../../daemon/cluster/nodes/tunnel';
import { readText, SendError } from '../../daemon/http';
import { startNodeAgent } from '../../daemon/node/agent';
import { InferenceRole } from '../../daemon/node/inference';
import { waitFor } from '../helpers/wait';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
let dir: string;
const children: ChildProcess[] = [];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'harness-rl-node-cli-'));
});
afterAll(async () => {
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
  await rm(dir, { recursive: true, force: true });
});

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

function nodeCli(args: string[], env: NodeJS.ProcessEnv = {}) {
  const child = spawn(process.execPath, ['--import', 'tsx', 'daemon/cli/main.ts', 'node', ...args], {
    cwd: ROOT,
    env: { ...process.env, HARNESS_RL_GPU_CLAIMS: join(dir, 'gpu-claims'), ...env },
  });
  children.push(child);
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (d) => (stdout += d));
  child.stderr?.on('data', (d) => (stderr += d));
  const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
  const url = new Promise<string>((resolve, reject) => {
    child.stdout?.on('data', () => {
      const m = /"url":"(wss?:\/\/[^"]+)"/.exec(stdout);
      if (m) resolve(m[1]);
    });
    child.on('exit', (code) => reject(new Error(`node agent exited (${code}): ${stderr}`)));
  });
  url.catch(() => {});
  return { child, url, exited, stderr: () => stderr };
}

describe('harness-rl node', () => {
  it('refuses bad options with the usage and creates a missing token file with mode 0600', async () => {
    const bad = nodeCli([
      '--role',
      'inference',
      '--token-file',
      join(dir, 't0'),
      '--engine',
      'reference',
      '--vllm-url',
      'http://x',
    ]);
    expect(await bad.exited).toBe(2);
    expect(bad.stderr()).toMatch(/takes one of --model, --vllm-url, --vllm-cmd or --engine reference/);
    expect(bad.stderr()).not.toMatch(/created a node token/);
    const noRole = nodeCli(['--token-file', join(dir, 't0')]);
    expect(await noRole.exited).toBe(2);
    expect(noRole.stderr()).toMatch(/--role must be inference or trainer/);

    const tokenFile = join(dir, 'sub', 'token');
    const ok = nodeCli([
      '--role',
      'trainer',
      '--engine',
      'reference',
      '--listen',
      '127.0.0.1:0',
      '--token-file',
      tokenFile,
      '--data',
      join(dir, 'd1'),
    ]);
    expect(await ok.url).toMatch(/^ws:\/\/127\.0\.0\.1:\d+$/);
    expect(ok.stderr()).toMatch(/created a node token/);
    expect((await stat(tokenFile)).mode & 0o777).toBe(0o600);
    expect((await readFile(tokenFile, 'utf8')).trim()).toMatch(/^hrl_/);
    ok.child.kill('SIGTERM');
    const code = await ok.exited;
    expect(code, `${ok.child.signalCode} ${ok.stderr()}`).toBe(0);
  });

  it('refuses --listen 0.0.0.0 over plain ws:// naming the way out; --allow-plain-ws serves it and warns', async () => {
    const common = ['--role', 'trainer', '--engine', 'reference', '--data', join(dir, 'd-bind')];
    const plain = nodeCli([...common, '--listen', '0.0.0.0:0', '--token-file', join(dir, 't-bind')]);
    expect(await plain.exited).toBe(2);
    expect(plain.stderr()).toMatch(
      /--listen 0\.0\.0\.0 reaches beyond this machine and would serve plain WebSocket/,
    );
    expect(plain.stderr()).toMatch(/--tls-cert and --tls-key .* or --allow-plain-ws/);
    expect(plain.stderr()).not.toMatch(/created a node token/);

    const optOut = nodeCli([
      ...common,
      '--listen',
      '0.0.0.0:0',
      '--token-file',
      join(dir, 't-bind'),
      '--allow-plain-ws',
    ]);
    expect(await optOut.url).toMatch(/^ws:\/\/127\.0\.0\.1:\d+$/);
    expect(optOut.stderr()).toMatch(/WARNING: --allow-plain-ws: serving ws:\/\/ on 0\.0\.0\.0:0/);
    optOut.child.kill('SIGTERM');
    expect(await optOut.exited).toBe(0);
  });

  it('with --vllm-cmd starts the backend, tunnels calls to it, and restarts it when it dies', async () => {
    const port = await freePort();
    const pidFile = join(dir, 'backend.pid');
    const tokenFile = join(dir, 'token-vllm');
    const agent = nodeCli([
      '--role',
      'inference',
      '--listen',
      '127.0.0.1:0',
      '--token-file',
      tokenFile,
      '--data',
      join(dir, 'd2'),
      '--vllm-url',
      `http://127.0.0.1:${port}`,
      '--vllm-cmd',
      `${process.execPath} --import tsx test/fixtures/reference-server.ts ${port} ${join(dir, 'engine')} ${pidFile}`,
    ]);
    const url = await agent.url;
    const token = (await readFile(tokenFile, 'utf8')).trim();
    const connection = new NodeConnection({ url, token, role: 'inference', log: () => {} });
    try {
      await connection.ready(30_000);
      const tunnel = new NodeTunnel(connection);
      const models = async () => {
        const res = await tunnel.send('/v1/models', { method: 'GET', timeoutMs: 5000 });
        return { status: res.statusCode, body: await readText(res) };
      };
      const first = await waitFor('the backend to answer', async () => {
        const r = await models();
        return r.status === 200 ? r : null;
      });
      expect(JSON.parse(first.body).data[0].id).toBe('reference');

      const pid = Number(await readFile(pidFile, 'utf8'));
      process.kill(pid, 'SIGKILL');
      const down = await waitFor('a health report with the backend down', () =>
        connection.health && !connection.health.ready ? connection.health : null,
      );
      expect(down.last_error).toMatch(/vllm exited|backend/);
      const back = await waitFor('the restarted backend', () =>
        connection.health?.ready && connection.health.restarts >= 1 ? connection.health : null,
      );
      expect(back.restarts).toBe(1);
      expect((await models()).status).toBe(200);
      expect(Number(await readFile(pidFile, 'utf8'))).not.toBe(pid);
    } finally {
      connection.close();
      agent.child.kill('SIGTERM');
      expect(await agent.exited).toBe(0);
    }
  });
});

describe('harness-rl node checks its vLLM command and GPUs at start (preflight)', () => {
  it("refuses the README's old vLLM command naming each missing flag, and starts nothing", async () => {
    const refused = nodeCli([
      '--role',
      'inference',
      '--listen',
      '127.0.0.1:0',
      '--token-file',
      join(dir, 'token-pre'),
      '--data',
      join(dir, 'd-pre'),
      '--vllm-cmd',
      'vllm serve Qwen/Qwen3-1.7B --served-model-name base --enable-lora --max-lora-rank 32 --port 8000',
    ]);
    expect(await refused.exited).toBe(2);
    const err = refused.stderr();
    expect(err).toMatch(/refusing to start vLLM: vllm serve Qwen\/Qwen3-1\.7B/);
    for (const flag of [
      '--host 127.0.0.1 is missing',
      '--enable-auto-tool-choice is missing',
      '--tool-call-parser hermes is missing',
      '--reasoning-parser qwen3 is missing',
      '--generation-config vllm is missing',
    ])
      expect(err).toContain(flag);
    expect(err).not.toMatch(/node agent listening/);
  });

  it('refuses a second role on the same GPU without a memory split, naming the first; with one it starts', async () => {
    // A stand-in for vLLM's `vllm` executable (none can exist here): it only stays up.
    const bin = join(dir, 'bin');
    await mkdir(bin, { recursive: true });
    await writeFile(join(bin, 'vllm'), '#!/bin/sh\nexec sleep 600\n', { mode: 0o755 });
    const env = { PATH: `${bin}:${process.env.PATH}` };
    const trainer = nodeCli(
      [
        '--role',
        'trainer',
        '--listen',
        '127.0.0.1:0',
        '--token-file',
        join(dir, 'token-gpu'),
        '--data',
        join(dir, 'd-gpu-t'),
        '--gpus',
        '0',
        '--trainer-cmd',
        'sleep 600',
      ],
      env,
    );
    await trainer.url;
    const vllmCmd =
      'vllm serve Qwen/Qwen3-1.7B --host 127.0.0.1 --port 18999 --generation-config vllm --enable-auto-tool-choice --tool-call-parser hermes --reasoning-parser qwen3 --enable-lora --max-lora-rank 32';
    const args = [
      '--role',
      'inference',
      '--listen',
      '127.0.0.1:0',
      '--token-file',
      join(dir, 'token-gpu'),
      '--data',
      join(dir, 'd-gpu-i'),
      '--vllm-url',
      'http://127.0.0.1:18999',
      '--gpus',
      '0',
      '--vllm-cmd',
      vllmCmd,
    ];
    try {
      const clash = nodeCli(args, env);
      expect(await clash.exited).toBe(2);
      expect(clash.stderr()).toMatch(
        new RegExp(
          `--gpu-memory-utilization is missing and the GPU is shared with the trainer node agent \\(pid ${trainer.child.pid}, 127\\.0\\.0\\.1:0\\) on GPU 0`,
        ),
      );
      const split = nodeCli([...args, '--gpu-memory-utilization', '0.5'], env);
      await split.url;
      expect(split.stderr()).toMatch(
        /starting vLLM .*--gpu-memory-utilization 0\.5.*"CUDA_VISIBLE_DEVICES":"0"/,
      );
      split.child.kill('SIGTERM');
      expect(await split.exited).toBe(0);
    } finally {
      trainer.child.kill('SIGTERM');
      await trainer.exited;
    }
  });
});

describe('the tunnel to a node', () => {
  it('gives up on a node that goes silent past the request deadline (a timeout, the request cancelled)', async () => {
    const dataDir = join(dir, 'silent');
    const role = new InferenceRole({ dataDir, engine: 'reference', log: () => {} });
    const seen: string[] = [];
    const handle = role.handle.bind(role);
    // The node takes requests and never answers them; it does see the cancel.
    role.handle = (frame, peer) => {
      seen.push(frame.header.t);
      if (frame.header.t !== 'http') handle(frame, peer);
    };
    const node = await startNodeAgent({ host: '127.0.0.1', port: 0, token: 't', role, log: () => {} });
    const connection = new NodeConnection({ url: node.url, token: 't', role: 'inference', log: () => {} });
    try {
      await connection.ready();
      const tunnel = new NodeTunnel(connection, 300);
      const started = Date.now();
      const err = await tunnel.send('/v1/models', { method: 'GET', timeoutMs: 200 }).catch((e) => e);
      expect(err).toBeInstanceOf(SendError);
      expect(err).toMatchObject({ kind: 'timeout' });
      expect(err.message).toMatch(/sent nothing for 500 ms/);
      expect(Date.now() - started).toBeLessThan(3000);
      await waitFor('the cancel to reach the node', () => seen.includes('cancel'));
    } finally {
      connection.close();
      await node.close();
    }
  });
});
