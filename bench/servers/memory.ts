// The proxy as the daemon serves it, for bench/memory.ts: registerProxy over a real SQLite store,
// BACKEND its only backend, run with --expose-gc. Bundled like the daemon; prints {origin} first.
//   POST /bench/rollout      a standalone rollout with a running attempt: {id, key}
//   POST /bench/end?id=      completes it (the harness's POST /api/rollouts/:id/complete)
//   GET  /bench/heap         the heap after two full collections, and what the per-rollout caches hold
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Fastify from 'fastify';
import { DaemonConfig } from '../../daemon/protocol/config';
import { proxyServerFactory } from '../../daemon/proxy/front';
import { registerProxy } from '../../daemon/proxy/index';
import { openStore } from '../../daemon/store/open';

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('run with --expose-gc');
const dataDir = mkdtempSync(join(tmpdir(), 'harness-rl-bench-memory-'));
const store = await openStore('sqlite', dataDir);
const config = DaemonConfig.parse({ port: 0, backends: [process.env.BACKEND] });
const ctx = { store, config, token: 'bench-token', dataDir, baseUrl: () => '', log: () => {} };
const app = Fastify({
  serverFactory: proxyServerFactory(),
  logger: false,
  bodyLimit: config.body_limit_bytes,
});
const proxy = await registerProxy(app, ctx);
app.post('/bench/rollout', async () => {
  const r = await store.createRollout({ kind: 'standalone' });
  await store.startAttempt(r.id, 'bench');
  return { id: r.id, key: r.key };
});
app.post('/bench/end', async (req) => {
  await store.completeRollout(String((req.query as { id?: string }).id));
  return {};
});
app.get('/bench/heap', async () => {
  // Twice: what the first collection frees may hold more that only the second can see.
  gc();
  await new Promise((r) => setImmediate(r));
  gc();
  const held = (proxy as { held?: () => unknown }).held?.() ?? null;
  const chains = (store as { chainsHeld?: unknown }).chainsHeld ?? null;
  return { heap_used: process.memoryUsage().heapUsed, held, chains };
});
process.on('SIGINT', () => store.close().finally(() => process.exit(0)));
await app.listen({ port: 0, host: '127.0.0.1' });
const address = app.server.address();
const port = typeof address === 'object' && address ? address.port : 0;
process.stdout.write(`${JSON.stringify({ origin: `http://127.0.0.1:${port}`, data_dir: dataDir })}\n`);
