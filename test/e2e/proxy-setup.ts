// A real proxy for the proxy-*.test.ts files: fastify on 127.0.0.1 port 0, a real SQLite store in a
// temp folder, registerProxy, and helpers that create rollouts and recordings through the store.
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Fastify from 'fastify';
import OpenAI from 'openai';
import { afterAll, beforeAll } from 'vitest';
import type { DaemonContext } from '../../daemon/context';
import { DaemonConfig, RunConfig } from '../../daemon/protocol/config';
import type { LlmCall } from '../../daemon/protocol/entities';
import { type ProxyHandle, registerProxy } from '../../daemon/proxy';
import { proxyServerFactory } from '../../daemon/proxy/front';
import { openStore } from '../../daemon/store/open';
import type { Store } from '../../daemon/store/store';
import { type FakeVllm, startFakeVllm } from '../fixtures/fake-vllm';

export interface TestProxy {
  url: string;
  token: string;
  dataDir: string;
  store: Store;
  proxy: ProxyHandle;
  /** A standalone rollout with a running attempt: its id, key and an openai client scoped to it. */
  rollout(options?: {
    tito?: boolean;
  }): Promise<{ id: string; key: string; client: OpenAI; baseURL: string }>;
  /** The same for a rollout of a new run (model "toy") with the given algorithm settings (e.g. tito). */
  runRollout(
    name: string,
    algorithm: Record<string, unknown>,
  ): Promise<{ id: string; key: string; client: OpenAI; baseURL: string }>;
  calls(rolloutId: string): Promise<LlmCall[]>;
  close(): Promise<void>;
}

export async function startTestProxy(
  options: {
    backends?: string[];
    bodyLimitBytes?: number;
    backendTimeoutMs?: number;
    sideModels?: string;
    /** The token bridge's memory budget (registerProxy's default otherwise). */
    bridgeBudgetBytes?: number;
    /** config model_files and tokenizer_check_every: the daemon's own tokenizers for the bridge. */
    modelFiles?: Record<string, string>;
    tokenizerCheckEvery?: number;
  } = {},
): Promise<TestProxy> {
  const dataDir = await mkdtemp(join(tmpdir(), 'harness-rl-proxy-'));
  const store = await openStore('sqlite', dataDir);
  const token = `test_${randomBytes(12).toString('hex')}`;
  const config = DaemonConfig.parse({
    port: 0,
    data: dataDir,
    backends: options.backends ?? [],
    ...(options.bodyLimitBytes ? { body_limit_bytes: options.bodyLimitBytes } : {}),
    ...(options.backendTimeoutMs ? { backend_timeout_ms: options.backendTimeoutMs } : {}),
    ...(options.sideModels ? { side_models: options.sideModels } : {}),
    ...(options.modelFiles ? { model_files: options.modelFiles } : {}),
    ...(options.tokenizerCheckEvery !== undefined
      ? { tokenizer_check_every: options.tokenizerCheckEvery }
      : {}),
  });
  let url = '';
  const ctx: DaemonContext = { store, config, token, dataDir, baseUrl: () => url, log: () => {} };
  const app = Fastify({
    serverFactory: proxyServerFactory(),
    logger: false,
    bodyLimit: config.body_limit_bytes,
    forceCloseConnections: true,
  });
  const proxy = await registerProxy(app, ctx, { bridgeBudgetBytes: options.bridgeBudgetBytes });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const address = app.server.address();
  url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  /** Start an attempt on a new rollout and give its id, key and an openai client scoped to it. */
  const scoped = async (r: { id: string; key: string }) => {
    await store.startAttempt(r.id, 'test');
    const baseURL = `${url}/r/${r.id}/v1`;
    return { id: r.id, key: r.key, baseURL, client: new OpenAI({ baseURL, apiKey: r.key, maxRetries: 0 }) };
  };
  return {
    url,
    token,
    dataDir,
    store,
    proxy,
    async rollout(options = {}) {
      return scoped(await store.createRollout({ kind: 'standalone', ...options }));
    },
    async runRollout(name, algorithm) {
      const config = RunConfig.parse({ name, model: { name: 'toy' }, tasks: { file: 'x.jsonl' }, algorithm });
      const run = await store.createRun({ name, config });
      return scoped(await store.createRollout({ kind: 'run', run_id: run.id }));
    },
    calls: (id) => store.listLlmCalls(id),
    async close() {
      await app.close();
      await store.close();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/**
 * For a test file: a fake vLLM serving model "toy" and a test proxy in front of it, started in beforeAll
 * and closed in afterAll. Read `.fake` and `.proxy` inside the tests.
 */
export function proxyOnFakeVllm(options: Omit<Parameters<typeof startTestProxy>[0], 'backends'> = {}): {
  readonly fake: FakeVllm;
  readonly proxy: TestProxy;
} {
  let fake: FakeVllm | undefined;
  let proxy: TestProxy | undefined;
  beforeAll(async () => {
    fake = await startFakeVllm({ model: 'toy' });
    proxy = await startTestProxy({ ...options, backends: [fake.url] });
  });
  afterAll(async () => {
    await proxy?.close();
    await fake?.close();
  });
  const started = <T>(v: T | undefined): T => {
    if (v === undefined) throw new Error('proxyOnFakeVllm: read .fake/.proxy inside tests, after beforeAll');
    return v;
  };
  return {
    get fake() {
      return started(fake);
    },
    get proxy() {
      return started(proxy);
    },
  };
}
