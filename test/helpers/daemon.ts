// Starts a real daemon for end-to-end tests: a temp data folder, port 0 and a random token.
// `api()` calls the REST API with the daemon token (or a rollout key); `close()` stops it and removes the folder.
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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
