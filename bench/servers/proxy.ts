// The proxy as the daemon serves it, for bench/proxy.ts: registerProxy on fastify over a real store
// (STORE: sqlite or a PostgreSQL URL), one standalone rollout, BACKEND its only backend. Bundled
// like the daemon (no tsx) so the figures are the shipped code's; prints {url, key} on its first line.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Fastify from 'fastify';
import { DaemonConfig } from '../../daemon/protocol/config';
import { proxyServerFactory } from '../../daemon/proxy/front';
import { registerProxy } from '../../daemon/proxy/index';
import { openStore } from '../../daemon/store/open';

const dataDir = mkdtempSync(join(tmpdir(), 'harness-rl-bench-'));
const store = await openStore(process.env.STORE ?? 'sqlite', dataDir);
const config = DaemonConfig.parse({ port: 0, backends: [process.env.BACKEND] });
const ctx = { store, config, token: 'bench-token', dataDir, baseUrl: () => '', log: () => {} };
const app = Fastify({
  serverFactory: proxyServerFactory(),
  logger: false,
  bodyLimit: config.body_limit_bytes,
});
await registerProxy(app, ctx);
await app.listen({ port: 0, host: '127.0.0.1' });
const r = await store.createRollout({ kind: 'standalone' });
await store.startAttempt(r.id, 'bench');
process.on('SIGINT', () => store.close().finally(() => process.exit(0)));
const address = app.server.address();
const port = typeof address === 'object' && address ? address.port : 0;
process.stdout.write(`${JSON.stringify({ url: `http://127.0.0.1:${port}/r/${r.id}/v1`, key: r.key })}\n`);
