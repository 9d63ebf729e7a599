// The daemon process: one fastify app with the REST API, the LLM proxy and the cluster, over one store.
// startDaemon builds the context, registers the parts in order and closes them in reverse.
import { mkdirSync } from 'node:fs';
import { resolve } from 'node:path';
import Fastify, { type FastifyInstance, type FastifyReply } from 'fastify';
import { apiJsonParser, registerApi } from './api';
import { errorBody, frameworkApiError } from './api/errors';
import { registerCluster } from './cluster';
import { boundUrl, checkBind, isLoopback } from './config/bind';
import { readSecrets } from './config/secrets';
import { ensureToken } from './config/token';
import type { DaemonContext } from './context';
import { errorText } from './error-text';
import { Evolutions } from './evolve';
import { DaemonConfig, type DaemonConfigInput } from './protocol/config';
import { registerProxy } from './proxy';
import { proxyServerFactory } from './proxy/front';
import { redactText, registerSecret } from './redact';
import { openStore } from './store/open';
import type { Store } from './store/store';
import { registerTelemetry } from './telemetry';

export interface DaemonOptions {
  dataDir: string;
  /** The config file's `daemon` section (DaemonConfig); the options below override its fields. */
  config?: DaemonConfigInput;
  /** Default 4100; 0 picks a free port. */
  port?: number;
  /** Default 127.0.0.1. */
  host?: string;
  /** "sqlite" (default) or a postgres://… URL. */
  store?: string;
  /** Overrides the stored token (HARNESS_RL_TOKEN does the same). */
  token?: string;
  /** vLLM-compatible inference backends handed to the proxy. */
  backends?: string[];
  bodyLimitBytes?: number;
  backendTimeoutMs?: number;
  log?: (line: string) => void;
  /** Options for the cluster (scheduler sweep and heartbeat intervals). */
  cluster?: Parameters<typeof registerCluster>[2];
  /** PEM certificate and key: serve https (required to bind anything but loopback). */
  tls?: { cert: string; key: string };
  /** Bind a non-loopback host over plain HTTP anyway (logged as a warning on every start). */
  allowPlainHttp?: boolean;
  /** Opens the store (default: openStore from store/open). */
  openStore?: (spec: string, dataDir: string) => Promise<Store>;
}

export interface Daemon {
  /** http(s)://127.0.0.1:PORT (loopback where the daemon listens on every address) */
  url: string;
  /** The address as bound: http(s)://ADDRESS:PORT (`0.0.0.0` or `[::]` for every address). */
  boundUrl: string;
  port: number;
  token: string;
  /** True when this start created the token (the CLI prints it once). */
  tokenCreated: boolean;
  ctx: DaemonContext;
  /** The fastify app (tests may use app.inject / app.hasRoute). */
  app: FastifyInstance;
  close(): Promise<void>;
}

/** The user's upstream API keys (<data>/secrets.json) are redacted wherever they might show up. */
function registerUpstreamKeys(dataDir: string): void {
  try {
    for (const [name, value] of Object.entries(readSecrets(dataDir)))
      if (!name.includes(':')) registerSecret(value);
  } catch {
    // A malformed file is reported when a recording needs a key from it.
  }
}

/**
 * Fastify's schema compilers: none. Routes validate with the zod schemas of daemon/protocol/ and
 * declare no Fastify schema; without these Fastify requires ajv and fast-json-stringify at start
 * (~300 modules) for nothing.
 */
function zodOnly(): never {
  throw new Error('daemon routes validate with zod (daemon/protocol/), not Fastify schemas');
}

/** The config file's daemon section, with the explicit options over it. */
function daemonConfig(options: DaemonOptions, dataDir: string): DaemonConfig {
  const overrides = {
    port: options.port,
    host: options.host,
    store: options.store,
    backends: options.backends,
    body_limit_bytes: options.bodyLimitBytes,
    backend_timeout_ms: options.backendTimeoutMs,
  };
  return DaemonConfig.parse({
    ...options.config,
    ...Object.fromEntries(Object.entries(overrides).filter(([, v]) => v !== undefined)),
    data: dataDir,
  });
}

/** The daemon's log lines: timestamped, secrets redacted; nothing without a writer. */
function daemonLog(write: DaemonOptions['log']): DaemonContext['log'] {
  return (message, detail) => {
    if (write)
      write(
        redactText(`${new Date().toISOString()} ${message}${detail ? ` ${JSON.stringify(detail)}` : ''}`),
      );
  };
}

/** The Fastify app: the proxy's node:http front, API-shaped errors, JSON bodies parsed like the API's. */
function createApp(options: DaemonOptions, config: DaemonConfig): FastifyInstance {
  // Every route pattern, for naming the parameter of a URL whose escapes do not decode.
  const patterns = new Set<string>();
  const app = Fastify({
    serverFactory: proxyServerFactory(options.tls),
    frameworkErrors: (err, req, reply) => {
      const e = frameworkApiError(err, req.raw.url ?? '/', patterns);
      (reply as FastifyReply).code(e.status).send(errorBody(e));
    },
    logger: false,
    bodyLimit: config.body_limit_bytes,
    forceCloseConnections: true,
    return503OnClosing: true,
    schemaController: { compilersFactory: { buildValidator: zodOnly, buildSerializer: zodOnly } },
  });
  app.addHook('onRoute', (route) => {
    patterns.add(route.url);
  });
  // Routes outside /api and the proxy parse JSON bodies like the API.
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, apiJsonParser);
  return app;
}

export async function startDaemon(options: DaemonOptions): Promise<Daemon> {
  const dataDir = resolve(options.dataDir);
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const config = daemonConfig(options, dataDir);
  const { token, created } = ensureToken(dataDir, options.token ?? process.env.HARNESS_RL_TOKEN);
  // A token of the user's own choosing need not look like one: the redactor is told it.
  registerSecret(token);
  registerUpstreamKeys(dataDir);
  const log = daemonLog(options.log);

  await checkBind(config.host, options.tls !== undefined, options.allowPlainHttp === true);
  const store = await (options.openStore ?? openStore)(config.store, dataDir);
  let url = '';
  const ctx: DaemonContext = { store, config, token, dataDir, baseUrl: () => url, log };
  const app = createApp(options, config);
  // Closed in reverse: the run controller, the event sockets, the HTTP server, then the store.
  const closers: (() => Promise<void>)[] = [() => store.close(), () => app.close()];
  const closeAll = async () => {
    for (const close of closers.splice(0).reverse()) {
      try {
        await close();
      } catch (err) {
        log('close failed', { error: errorText(err) });
      }
    }
  };
  try {
    const api = await registerApi(app, ctx);
    closers.push(() => api.close());
    const proxy = await registerProxy(app, ctx);
    ctx.backends = () => proxy.pool.list();
    const telemetry = registerTelemetry(app, ctx, proxy.recorderDepth);
    closers.push(() => telemetry.close());
    for (const backend of config.backends) proxy.backends.add(backend);
    ctx.runs = await registerCluster(ctx, proxy, options.cluster);
    const runs = ctx.runs;
    closers.push(() => runs.close());
    const evolutions = new Evolutions(ctx);
    ctx.evolutions = evolutions;
    closers.push(() => evolutions.close());
    await evolutions.recover();
    await app.listen({ port: config.port, host: config.host });
  } catch (err) {
    await closeAll();
    if ((err as NodeJS.ErrnoException).code === 'EADDRINUSE') {
      throw new Error(
        `${config.host}:${config.port} is already in use: is another harness-rl daemon running? (pick another with --port)`,
      );
    }
    throw err;
  }
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : config.port;
  const bound = typeof address === 'object' && address ? address.address : config.host;
  const scheme = options.tls ? 'https' : 'http';
  const everywhere = bound === '0.0.0.0' || bound === '::';
  url = boundUrl(scheme, everywhere ? (bound === '::' ? '::1' : '127.0.0.1') : bound, port);
  const shown = boundUrl(scheme, bound, port);
  log('daemon listening', { url: shown, store: store.kind, dataDir });
  if (!options.tls && !isLoopback(bound))
    log(
      `WARNING: --allow-plain-http: serving plain HTTP on ${shown}; the token, rollout keys and every prompt cross the network unencrypted`,
    );

  let closing: Promise<void> | null = null;
  return {
    url,
    boundUrl: shown,
    port,
    token,
    tokenCreated: created,
    ctx,
    app,
    close: () => {
      closing ??= closeAll().then(() => log('daemon stopped'));
      return closing;
    },
  };
}
