// The daemon as a process: its token file, its secrets file, and `harness-rl daemon` / `harness-rl run`
// as real child processes (started, used over HTTP, stopped with SIGTERM).
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCommand } from '../../daemon/cli/commands/run';
import { readSecrets, secretsPath, writeSecret } from '../../daemon/config/secrets';
import { tokenPath } from '../../daemon/config/token';
import { startDaemonProcess as startDaemon, startTestDaemon } from '../helpers/daemon';

let dir: string;

beforeAll(async () => {
  delete process.env.HARNESS_RL_TOKEN;
  dir = await mkdtemp(join(tmpdir(), 'harness-rl-process-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const mode = async (file: string) => (await stat(file)).mode & 0o777;

describe('token and secrets files', () => {
  it('the first start creates a 0600 token file; later starts reuse it; an explicit token overrides it', async () => {
    const dataDir = join(dir, 'token-data');
    const first = await startTestDaemon({ dataDir, token: undefined });
    expect(first.tokenCreated).toBe(true);
    expect(await mode(tokenPath(dataDir))).toBe(0o600);
    expect((await readFile(tokenPath(dataDir), 'utf8')).trim()).toBe(first.token);
    expect((await first.api('GET', '/api/runs')).status).toBe(200);
    await first.close();

    const second = await startTestDaemon({ dataDir, token: undefined });
    expect(second.tokenCreated).toBe(false);
    expect(second.token).toBe(first.token);
    await second.close();

    const overridden = await startTestDaemon({ dataDir, token: 'explicit-token' });
    expect(overridden.token).toBe('explicit-token');
    expect((await overridden.api('GET', '/api/runs', undefined, first.token)).status).toBe(401);
    expect((await readFile(tokenPath(dataDir), 'utf8')).trim()).toBe(first.token);
    await overridden.close();
  });

  it('secrets are written 0600, read back, and removed', async () => {
    const dataDir = join(dir, 'secrets-data');
    expect(readSecrets(dataDir)).toEqual({});
    writeSecret(dataDir, 'anthropic', 'sk-ant-1');
    writeSecret(dataDir, 'openai', 'sk-2');
    expect(await mode(secretsPath(dataDir))).toBe(0o600);
    expect(readSecrets(dataDir)).toEqual({ anthropic: 'sk-ant-1', openai: 'sk-2' });
    writeSecret(dataDir, 'openai', null);
    expect(readSecrets(dataDir)).toEqual({ anthropic: 'sk-ant-1' });
  });
});

/** `harness-rl run …`, in-process (the daemon it talks to is a real child process). */
async function cli(args: string[]) {
  const stdout: string[] = [];
  const stderr: string[] = [];
  const [command, ...rest] = args;
  expect(command).toBe('run');
  const code = await runCommand(rest, { out: (t) => stdout.push(t), err: (t) => stderr.push(t) });
  return { code, stdout: stdout.join('\n'), stderr: stderr.join('\n') };
}

/** Starts `harness-rl daemon` and waits for its "listening on" line. */
const startDaemonProcess = (dataDir: string) =>
  startDaemon(['--port', '0', '--data', dataDir], { env: { ...process.env, HARNESS_RL_TOKEN: '' } });

describe('harness-rl daemon and harness-rl run', () => {
  it('serves until SIGTERM, prints the token only when it created it, and runs are managed with the run command', async () => {
    const dataDir = join(dir, 'cli-data');
    const daemon = await startDaemonProcess(dataDir);
    try {
      const health = await fetch(`${daemon.url}/api/health`);
      expect(health.status).toBe(200);
      const token = (await readFile(tokenPath(dataDir), 'utf8')).trim();
      expect(daemon.output()).toContain(token);

      await writeFile(join(dir, 'tasks.jsonl'), '{"q": 1}\n{"q": 2}\n');
      await writeFile(join(dir, 'harness.yaml'), 'run:\n  name: cli-run\n  tasks:\n    file: tasks.jsonl\n');
      const common = ['--url', daemon.url, '--data', dataDir];
      const started = await cli(['run', 'start', join(dir, 'harness.yaml'), ...common]);
      expect(started.stderr).toBe('');
      expect(started.code).toBe(0);
      const id = /started run (\S+) \(cli-run\)/.exec(started.stdout)?.[1];
      expect(id).toBeTruthy();

      const listed = await cli(['run', 'list', ...common]);
      expect(listed.code).toBe(0);
      expect(listed.stdout).toContain(id);
      expect(listed.stdout).toContain('cli-run');

      const shown = await cli(['run', 'show', id!, ...common]);
      expect(shown.code).toBe(0);
      expect(JSON.parse(shown.stdout)).toMatchObject({ id, name: 'cli-run', metrics: [] });

      const stopped = await cli(['run', 'stop', id!, ...common]);
      expect(stopped.code).toBe(0);
      expect(stopped.stdout).toContain('stopped');

      const missing = await cli(['run', 'show', 'run_nope', ...common]);
      expect(missing.code).toBe(1);
      expect(missing.stderr).toContain('run_nope');

      await writeFile(
        join(dir, 'bad.yaml'),
        'run:\n  name: bad\n  tasks:\n    file: tasks.jsonl\n  algorithm:\n    n: 0\n',
      );
      const bad = await cli(['run', 'start', join(dir, 'bad.yaml'), ...common]);
      expect(bad.code).toBe(1);
      expect(bad.stderr).toContain(`${join(dir, 'bad.yaml')}:6:8: run.algorithm.n`);

      const wrongToken = await cli(['run', 'list', '--url', daemon.url, '--token', 'wrong']);
      expect(wrongToken.code).toBe(1);
      expect(wrongToken.stderr).toContain('invalid token');
    } finally {
      daemon.child.kill('SIGTERM');
    }
    expect(await daemon.exited).toBe(0);
    expect(daemon.output()).toContain('harness-rl daemon stopped');
    await expect(fetch(`${daemon.url}/api/health`)).rejects.toThrow();

    // A second start reuses the token and does not print it.
    const again = await startDaemonProcess(dataDir);
    const token = (await readFile(tokenPath(dataDir), 'utf8')).trim();
    again.child.kill('SIGINT');
    expect(await again.exited).toBe(0);
    expect(again.output()).not.toContain(token);
  }, 180_000);

  it('the run command reports an unreachable daemon instead of crashing', async () => {
    const res = await cli(['run', 'list', '--url', 'http://127.0.0.1:1', '--token', 't']);
    expect(res.code).toBe(1);
    expect(res.stderr).toContain('cannot reach the daemon');
  });
});

describe('start-up failures', () => {
  it('a port already in use is a clear error and leaves nothing open', async () => {
    const first = await startTestDaemon();
    try {
      await expect(startTestDaemon({ port: first.port })).rejects.toThrow(/already in use.*--port/);
      expect((await first.api('GET', '/api/health')).status).toBe(200);
    } finally {
      await first.close();
    }
  });
});
