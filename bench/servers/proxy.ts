// The proxy as the daemon serves it, for bench/proxy.ts: registerProxy on fastify over a real store
// (STORE: sqlite or a PostgreSQL URL), one standalone rollout, BACKEND its only backend. Bundled
// like the daemon (no tsx) so the figures are the shipped code's; prints {url, key} on its first line.
// RECORD=off stores no call. MODEL_FILES=dir gives the bridge the toy model's own files (config model_files). CONVERSATIONS=n adds n rollouts with the token bridge on and n with it off (`conversations`:
// {bridged, native}, each a list of {url, key}), and GET /bench/token-sources?rollouts=a,b counts
// their calls by token source.
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
// RECORD=off: calls are not stored (the store's two record methods resolve at once): what the proxy's
// own path costs without its record, for bench/proxy.ts's BENCH_UNRECORDED.
if (process.env.RECORD === 'off') {
  store.recordLlmCall = async () => ({}) as Awaited<ReturnType<typeof store.recordLlmCall>>;
  store.recordLlmCalls = async () => [];
}
// MODEL_FILES: the toy model's folder, so bridged calls tokenize in the proxy (config model_files)
const modelFiles = process.env.MODEL_FILES ? { model_files: { toy: process.env.MODEL_FILES } } : {};
const config = DaemonConfig.parse({ port: 0, backends: [process.env.BACKEND], ...modelFiles });
const ctx = { store, config, token: 'bench-token', dataDir, baseUrl: () => '', log: () => {} };
const app = Fastify({
  serverFactory: proxyServerFactory(),
  logger: false,
  bodyLimit: config.body_limit_bytes,
});
await registerProxy(app, ctx);
app.get('/bench/token-sources', async (req) => {
  const counts: Record<string, number> = {};
  const ids = String((req.query as { rollouts?: string }).rollouts ?? '').split(',');
  for (const id of ids.filter(Boolean))
    for (const c of await store.listLlmCalls(id)) counts[c.token_source] = (counts[c.token_source] ?? 0) + 1;
  return counts;
});
await app.listen({ port: 0, host: '127.0.0.1' });
const r = await store.createRollout({ kind: 'standalone' });
await store.startAttempt(r.id, 'bench');
const conversations = Number(process.env.CONVERSATIONS ?? 0);
const scoped = async (tito: boolean) => {
  const c = await store.createRollout({ kind: 'standalone', tito });
  await store.startAttempt(c.id, 'bench');
  return { id: c.id, key: c.key };
};
const bridged = await Promise.all(Array.from({ length: conversations }, () => scoped(true)));
const native = await Promise.all(Array.from({ length: conversations }, () => scoped(false)));
process.on('SIGINT', () => store.close().finally(() => process.exit(0)));
const address = app.server.address();
const port = typeof address === 'object' && address ? address.port : 0;
const origin = `http://127.0.0.1:${port}`;
const target = (c: { id: string; key: string }) => ({ base: `${origin}/r/${c.id}/v1`, key: c.key, id: c.id });
process.stdout.write(
  `${JSON.stringify({
    url: `${origin}/r/${r.id}/v1`,
    key: r.key,
    origin,
    conversations: { bridged: bridged.map(target), native: native.map(target) },
  })}\n`,
);
