// A real proxy for the proxy-*.test.ts files: fastify on 127.0.0.1 port 0, a real SQLite store in a
// temp folder, registerProxy, and helpers that create rollouts and recordings through the store.
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Fastify from 'fastify';
import OpenAI from 'openai';
import type { DaemonContext } from '../../daemon/context';
import { DaemonConfig } from '../../daemon/protocol/config';
import type { LlmCall } from '../../daemon/protocol/entities';
import { type ProxyHandle, registerProxy } from '../../daemon/proxy';
import { openStore } from '../../daemon/store/open';
import type { Store } from '../../daemon/store/store';

export interface TestProxy {
  url: string;
  token: string;
  dataDir: string;
  store: Store;
  proxy: ProxyHandle;
  /** A standalone rollout with a running attempt: its id, key and an openai client scoped to it. */
  rollout(): Promise<{ id: string; key: string; client: OpenAI; baseURL: string }>;
  calls(rolloutId: string): Promise<LlmCall[]>;
  close(): Promise<void>;
}

export async function startTestProxy(
  options: {
    backends?: string[];
    bodyLimitBytes?: number;
    backendTimeoutMs?: number;
    sideModels?: string;
  } = {},
): Promise<TestProxy> {
  const dataDir = await mkdtemp(join(tmpdir(), 'harness-rl-proxy-'));
  const store = await openStore('sqlite', dataDir);
  const token = `test_${randomBytes(12).toString('hex')}`;
  const config = DaemonConfig.parse({
    port: 0,
    backends: options.backends ?? [],
    ...(options.bodyLimitBytes ? { body_limit_bytes: options.bodyLimitBytes } : {}),
    ...(options.backendTimeoutMs ? { backend_timeout_ms: options.backendTimeoutMs } : {}),
    ...(options.sideModels ? { side_models: options.sideModels } : {}),
  });
  let url = '';
  const ctx: DaemonContext = { store, config, token, dataDir, baseUrl: () => url, log: () => {} };
  const app = Fastify({ logger: false, bodyLimit: config.body_limit_bytes, forceCloseConnections: true });
  const proxy = await registerProxy(app, ctx);
  await app.listen({ port: 0, host: '127.0.0.1' });
  const address = app.server.address();
  url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  return {
    url,
    token,
    dataDir,
    store,
    proxy,
    async rollout() {
      const r = await store.createRollout({ kind: 'standalone' });
      await store.startAttempt(r.id, 'test');
      const baseURL = `${url}/r/${r.id}/v1`;
      return { id: r.id, key: r.key, baseURL, client: new OpenAI({ baseURL, apiKey: r.key, maxRetries: 0 }) };
    },
    calls: (id) => store.listLlmCalls(id),
    async close() {
      await app.close();
      await store.close();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}
