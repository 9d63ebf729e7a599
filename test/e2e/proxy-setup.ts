// A real proxy for the proxy-*.test.ts files: fastify on 127.0.0.1 port 0, a real SQLite store in a
// temp folder, registerProxy, and helpers that create rollouts and recordings through the store; a
// hand-written backend (or none listening) to put behind it, and a JSON POST.
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
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

/**
 * POSTs `body` (an object as JSON, a string as it is) to `base + path`, with `key` as the bearer key
 * (none when null); the answer's status and body, parsed where it is JSON, else its text.
 */
export async function postJson(
  base: string,
  path: string,
  body: string | object,
  key: string | null,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: any }> {
  const res = await fetch(`${base}${path}`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      ...(key ? { authorization: `Bearer ${key}` } : {}),
      ...headers,
    },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  try {
    return { status: res.status, body: JSON.parse(text) };
  } catch {
    return { status: res.status, body: text };
  }
}

/** A backend that lists model "toy" (GET /v1/models) and answers every other request with `answer`. */
export async function startToyBackend(
  answer: (req: IncomingMessage, res: ServerResponse) => void,
): Promise<{ url: string; close(): Promise<void> }> {
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      if (req.method === 'GET' && req.url?.startsWith('/v1/models')) {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ object: 'list', data: [{ id: 'toy', object: 'model' }] }));
        return;
      }
      answer(req, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** `n` backend URLs where nothing listens any more (a connect is refused). */
export async function downBackends(n: number): Promise<string[]> {
  const backends = await Promise.all(Array.from({ length: n }, () => startToyBackend(() => {})));
  await Promise.all(backends.map((b) => b.close()));
  return backends.map((b) => b.url);
}

/** A test proxy started with `options` for `body`, closed after it (and `also`, e.g. its backend). */
export async function withTestProxy<T>(
  options: Parameters<typeof startTestProxy>[0],
  body: (proxy: TestProxy) => Promise<T>,
  also?: { close(): Promise<void> },
): Promise<T> {
  const proxy = await startTestProxy(options);
  try {
    return await body(proxy);
  } finally {
    await proxy.close();
    await also?.close();
  }
}
