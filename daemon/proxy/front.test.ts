// The proxy's front server keeps fastify's connection options (fastify sets them only on servers it
// makes itself): a harness's keep-alive socket outlives a long tool step between two calls.
import { type AddressInfo, connect } from 'node:net';
import Fastify from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { installFront, proxyServerFactory, sendJson } from './front';

const apps: { close(): Promise<unknown> }[] = [];
afterEach(async () => {
  for (const app of apps.splice(0)) await app.close();
});

async function serve(options: { keepAliveTimeout?: number } = {}) {
  const app = Fastify({ serverFactory: proxyServerFactory(), logger: false, ...options });
  app.get('/api/ping', async () => ({ api: true }));
  apps.push(app);
  await app.listen({ port: 0, host: '127.0.0.1' });
  installFront(app.server, (req, res) => {
    if (!req.url?.startsWith('/v1/')) return false;
    req.resume();
    sendJson(res, 200, '{"proxy":true}');
    return true;
  });
  return { app, port: (app.server.address() as AddressInfo).port };
}

/**
 * Two GETs over one raw keep-alive connection (no client agent, which would close an idle socket
 * itself); both answers, and how long after the second one the server closed the connection.
 */
function twoGetsThenIdle(port: number, paths: [string, string]): Promise<{ text: string; idleMs: number }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let text = '';
    let answered = 0;
    let lastAt = 0;
    const ask = (path: string) => socket.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`);
    socket.setEncoding('utf8');
    socket.on('data', (c: string) => {
      text += c;
      const done = text.split('HTTP/1.1 200').length - 1;
      if (done > answered) {
        answered = done;
        lastAt = performance.now();
        if (answered === 1) ask(paths[1]);
      }
    });
    socket.on('error', reject);
    socket.on('close', () => resolve({ text, idleMs: performance.now() - lastAt }));
    ask(paths[0]);
  });
}

describe('proxyServerFactory', () => {
  it("gives the server fastify's keep-alive limit (72 s by default), not node's 5 s", async () => {
    const { app } = await serve();
    expect(app.server.keepAliveTimeout).toBe(72_000);
    expect(app.server.requestTimeout).toBe(0);
  });

  it('closes an idle keep-alive socket after the configured limit, and the front and fastify both answer', async () => {
    const { port } = await serve({ keepAliveTimeout: 400 });
    const { text, idleMs } = await twoGetsThenIdle(port, ['/v1/models', '/api/ping']);
    expect(text).toContain('{"proxy":true}');
    expect(text).toContain('{"api":true}');
    expect(text).toContain('Keep-Alive: timeout=0'); // the limit, in whole seconds, as node announces it
    expect(idleMs).toBeGreaterThan(300);
    expect(idleMs).toBeLessThan(3_000); // node's own limit would keep it 5 s
  });
});
