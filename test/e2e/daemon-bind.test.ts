import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDaemonProcess } from '../helpers/daemon';
import { selfSignedCert } from '../helpers/tls';

let dir: string;
let cert: string;
let key: string;
const env = { ...process.env, HARNESS_RL_TOKEN: 'bind-test-token-0123456789' };

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'harness-rl-bind-'));
  ({ cert, key } = selfSignedCert(dir));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const args = (name: string, ...more: string[]) => ['--port', '0', '--data', join(dir, name), ...more];

async function stop(d: Awaited<ReturnType<typeof startDaemonProcess>>) {
  d.child.kill('SIGTERM');
  await d.exited;
}

/** GET /api/health over https, trusting only `ca`. */
function healthOverTls(url: string, ca: string): Promise<number> {
  return new Promise((resolve, reject) => {
    request(`${url}/api/health`, { ca }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    })
      .on('error', reject)
      .end();
  });
}

describe('the daemon binds', () => {
  it('refuses 0.0.0.0 over plain HTTP, naming the way out, and exits', async () => {
    const err = await startDaemonProcess(args('plain', '--host', '0.0.0.0'), { env }).then(
      () => null,
      (e: Error) => e,
    );
    expect(err?.message).toMatch(/exited early \(1\)/);
    expect(err?.message).toMatch(/--host 0\.0\.0\.0 reaches beyond this machine/);
    expect(err?.message).toMatch(/--tls-cert and --tls-key/);
    expect(err?.message).toMatch(/--allow-plain-http/);
  });

  it('serves https on 0.0.0.0 with --tls-cert/--tls-key and prints the address it bound', async () => {
    const d = await startDaemonProcess(
      args('tls', '--host', '0.0.0.0', '--tls-cert', cert, '--tls-key', key),
      {
        env,
      },
    );
    try {
      expect(d.url).toMatch(/^https:\/\/0\.0\.0\.0:\d+$/);
      const port = new URL(d.url).port;
      expect(d.output()).toContain(`locally https://127.0.0.1:${port}`);
      expect(await healthOverTls(`https://127.0.0.1:${port}`, await readFile(cert, 'utf8'))).toBe(200);
      // Plain HTTP gets no answer from a TLS socket.
      await expect(fetch(`http://127.0.0.1:${port}/api/health`)).rejects.toThrow();
    } finally {
      await stop(d);
    }
  });

  it('serves plain HTTP on 0.0.0.0 only with --allow-plain-http, and says so loudly', async () => {
    const d = await startDaemonProcess(args('optout', '--host', '0.0.0.0', '--allow-plain-http'), { env });
    try {
      expect(d.url).toMatch(/^http:\/\/0\.0\.0\.0:\d+$/);
      expect(d.errors()).toMatch(
        /WARNING: --allow-plain-http: serving plain HTTP on http:\/\/0\.0\.0\.0:\d+/,
      );
      const port = new URL(d.url).port;
      expect((await fetch(`http://127.0.0.1:${port}/api/health`)).status).toBe(200);
    } finally {
      await stop(d);
    }
  });

  it('binds loopback over plain HTTP as before, by address or by the name localhost', async () => {
    for (const host of ['127.0.0.1', 'localhost']) {
      const d = await startDaemonProcess(args(`loop-${host}`, '--host', host), { env });
      try {
        expect(d.url).toMatch(/^http:\/\/(127\.0\.0\.1|\[::1\]):\d+$/);
        expect(d.errors()).not.toContain('WARNING');
        expect((await fetch(`${d.url}/api/health`)).status).toBe(200);
      } finally {
        await stop(d);
      }
    }
  });
});
