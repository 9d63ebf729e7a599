// Starts a real daemon for end-to-end tests: a temp data folder, port 0 and a random token.
// `api()` calls the REST API with the daemon token (or a rollout key); `close()` stops it and removes the folder.
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Daemon, type DaemonOptions, startDaemon } from '../../daemon/daemon';

export type TestDaemon = Daemon & {
  dataDir: string;
  /** Call /api (or any path) with the daemon token, or with `key` when given; the body is parsed JSON when it is JSON. */
  // biome-ignore lint/suspicious/noExplicitAny: tests read response bodies loosely
  api<T = any>(
    method: string,
    path: string,
    body?: unknown,
    key?: string,
  ): Promise<{ status: number; body: T }>;
};

export async function startTestDaemon(options: Partial<DaemonOptions> = {}): Promise<TestDaemon> {
  const dataDir = options.dataDir ?? (await mkdtemp(join(tmpdir(), 'harness-rl-test-')));
  let daemon: Daemon;
  try {
    daemon = await startDaemon({
      port: 0,
      token: `test_${randomBytes(12).toString('hex')}`,
      ...options,
      dataDir,
    });
  } catch (err) {
    if (!options.dataDir) await rm(dataDir, { recursive: true, force: true });
    throw err;
  }
  const api = async <T>(method: string, path: string, body?: unknown, key?: string) => {
    const headers: Record<string, string> = { authorization: `Bearer ${key ?? daemon.token}` };
    if (body !== undefined) headers['content-type'] = 'application/json';
    const res = await fetch(`${daemon.url}${path}`, {
      method,
      headers,
      body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    });
    const text = await res.text();
    let parsed: unknown = text;
    if ((res.headers.get('content-type') ?? '').includes('json') && text) parsed = JSON.parse(text);
    return { status: res.status, body: parsed as T };
  };
  return {
    ...daemon,
    dataDir,
    api,
    close: async () => {
      await daemon.close();
      if (!options.dataDir) await rm(dataDir, { recursive: true, force: true });
    },
  };
}

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/**
 * `harness-rl daemon <args>` as a child process (from source, with `nodeFlags`); resolves with its
 * URL once it prints "listening on".
 */
export async function startDaemonProcess(
  args: string[],
  options: { env?: NodeJS.ProcessEnv; nodeFlags?: string[] } = {},
) {
  const child: ChildProcess = spawn(
    process.execPath,
    [...(options.nodeFlags ?? []), '--import', 'tsx', 'daemon/cli/main.ts', 'daemon', ...args],
    { cwd: ROOT, env: options.env ?? process.env },
  );
  let stdout = '';
  let stderr = '';
  child.stderr!.on('data', (d) => (stderr += d));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout!.on('data', (d) => {
      stdout += d;
      const m = /listening on (https?:\/\/[^\s,]+)/.exec(stdout);
      if (m) resolve(m[1]!);
    });
    child.on('exit', (code) => reject(new Error(`daemon exited early (${code}): ${stderr}`)));
  });
  return { child, url, exited, output: () => stdout, errors: () => stderr };
}
