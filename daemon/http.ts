// The daemon's HTTP client (the proxy, the cluster and the node agent reach backends with it): one undici
// agent for plain HTTP, registered transports for node agents' tunnels, failures told apart (connect,
// timeout, aborted).
import { EventEmitter } from 'node:events';
import type { IncomingHttpHeaders } from 'node:http';
import { createRequire } from 'node:module';
import type { Readable } from 'node:stream';
import type { Dispatcher } from 'undici';

// undici's agent and its request API alone, put together as the package's index does: the index
// also loads its fetch, WebSocket, mocks, caches and interceptors (110 modules against 31, ~8 MB
// resident) that the daemon never uses. undici has no "exports" map, so lib/ is reachable.
const load = createRequire(import.meta.url);
const Agent = load('undici/lib/dispatcher/agent.js') as typeof import('undici').Agent;
Object.assign(
  (load('undici/lib/dispatcher/dispatcher.js') as typeof import('undici').Dispatcher).prototype,
  load('undici/lib/api/index.js'),
);
const { parseHeaders } = load('undici/lib/core/util.js') as Pick<
  typeof import('undici').util,
  'parseHeaders'
>;

// undici rather than node:http: at 64 concurrent keep-alive calls it cost about half the CPU per
// request, which is most of what the proxy adds to a call (`npm run bench -- proxy`).
// Idle sockets are closed after 4 s, before vLLM's server closes them (VLLM_HTTP_TIMEOUT_KEEP_ALIVE,
// 5 s by default: vllm/envs.py:112), so a request rarely meets a socket the server is just closing;
// generation requests are not retried when it happens (see `send`).
const agent = new Agent({ keepAliveTimeout: 4_000, connections: null, pipelining: 1 });

/** `http://h:p/v1/` and `http://h:p` both → `http://h:p` (endpoints are appended as `/v1/...`). */
export function rootUrl(url: string): string {
  let u = url.trim().replace(/\/+$/, '');
  if (u.endsWith('/v1')) u = u.slice(0, -3);
  return u;
}

/** Where a URL's requests go, split once (parsing the URL on every request costs more than the request). */
interface RequestTarget {
  origin: string;
  path: string;
  authorization: string | undefined;
}

const targets = new Map<string, RequestTarget>();
function targetOf(url: string): RequestTarget {
  let t = targets.get(url);
  if (!t) {
    const u = new URL(url);
    t = {
      origin: u.origin,
      path: `${u.pathname}${u.search}`,
      authorization: u.username
        ? `Basic ${Buffer.from(`${decodeURIComponent(u.username)}:${decodeURIComponent(u.password)}`).toString('base64')}`
        : undefined,
    };
    if (targets.size > 1000) targets.clear();
    targets.set(url, t);
  }
  return t;
}

/** Why a request to a backend failed before a response came back. */
export class SendError extends Error {
  constructor(
    readonly kind: 'connect' | 'timeout' | 'aborted' | 'other',
    message: string,
  ) {
    super(message);
  }
}

export interface SendOptions {
  method?: string;
  body?: string | Buffer;
  headers?: Record<string, string>;
  /** Socket idle limit: no byte for this long → the request fails with a timeout. */
  timeoutMs: number;
  /** Set to the live request so the caller can abort it (client disconnect). */
  onRequest?: (abort: () => void) => void;
  /**
   * Safe to send twice (no generation runs twice): such a request, and every GET, is retried once
   * when a reused socket closes before any answer. A POST that is not is never retried: a backend
   * that closed before its headers may have run it already.
   */
  idempotent?: boolean;
}

/** What `send` resolves with: an HTTP response, or one tunnelled over a node agent's WebSocket. */
export type BackendResponse = Readable & {
  statusCode?: number;
  headers: IncomingHttpHeaders;
  /** True once the whole body arrived. */
  complete: boolean;
};

/** Carries requests to backends that are not plain HTTP (node agents: `ws(s)://host:port`). */
export interface Transport {
  send(path: string, opts: SendOptions): Promise<BackendResponse>;
}

const transports = new Map<string, Transport>();

/** Requests to `root + path` go through `transport` until unregistered. */
export function registerTransport(root: string, transport: Transport): () => void {
  transports.set(root, transport);
  return () => {
    if (transports.get(root) === transport) transports.delete(root);
  };
}

function transportOf(url: string): { transport: Transport; path: string } | null {
  // Node agents are ws:// or wss://; everything else is plain HTTP.
  if (url.charCodeAt(0) !== 119 /* w */) return null;
  const slash = url.indexOf('/', url.indexOf('//') + 2);
  const root = slash < 0 ? url : url.slice(0, slash);
  const transport = transports.get(root);
  return transport ? { transport, path: slash < 0 ? '/' : url.slice(slash) } : null;
}

/** The request of `opts` to target `t`, and whether it is safe to send again. */
function requestOf(
  t: RequestTarget,
  opts: SendOptions,
): { request: Dispatcher.DispatchOptions; retryable: boolean } {
  const headers: Record<string, string> = { accept: '*/*' };
  if (t.authorization) headers.authorization = t.authorization;
  Object.assign(headers, opts.headers);
  if (opts.body !== undefined) headers['content-type'] ??= 'application/json';
  const method = (opts.method ?? 'POST') as Dispatcher.HttpMethod;
  return {
    request: {
      origin: t.origin,
      path: t.path,
      method,
      headers,
      body: opts.body,
      headersTimeout: opts.timeoutMs,
      bodyTimeout: opts.timeoutMs,
    },
    retryable: opts.idempotent === true || method === 'GET' || method === 'HEAD',
  };
}

const noNode = (url: string) =>
  Promise.reject(new SendError('connect', `no connection to node ${url.split('/').slice(0, 3).join('/')}`));

/**
 * Why an attempt failed before any answer: null when it is to be sent again (a kept-alive socket
 * closed before any answer, and the request may be repeated), else the SendError to reject with.
 */
function attemptFailure(
  err: Error & { code?: string },
  o: { mayRetry: boolean; retryable: boolean; aborted: boolean; timeoutMs: number },
): SendError | null {
  // A kept-alive socket closed before any answer: the request may never have arrived, or the
  // backend may have run it and died; only a request that is safe to repeat is sent again.
  if (o.mayRetry && !o.aborted && reusedSocketClosed(err)) return null;
  if (!o.aborted && !o.retryable && reusedSocketClosed(err))
    return new SendError(
      'other',
      `backend closed the connection before answering (${err.code ?? err.message}); not retried: the backend may have run the request already`,
    );
  return sendError(err, o.aborted, o.timeoutMs);
}

/** One HTTP request over a keep-alive pool (or a node's tunnel); resolves once the response headers arrive. */
export function send(url: string, opts: SendOptions): Promise<BackendResponse> {
  const tunnel = transportOf(url);
  if (tunnel) return tunnel.transport.send(tunnel.path, opts);
  if (url.charCodeAt(0) === 119) return noNode(url);
  const { request, retryable } = requestOf(targetOf(url), opts);
  // An emitter is what undici listens to for 'abort'; an AbortController per call costs more.
  let signal: EventEmitter | undefined;
  let aborted = false;
  let response: BackendResponse | null = null;
  if (opts.onRequest) {
    const emitter = new EventEmitter();
    signal = emitter;
    opts.onRequest(() => {
      if (aborted) return;
      aborted = true;
      emitter.emit('abort');
      response?.destroy();
    });
  }
  const options: Dispatcher.RequestOptions = { ...request, signal };
  return new Promise((resolve, reject) => {
    attempt(retryable);
    function attempt(mayRetry: boolean): void {
      if (aborted) {
        reject(new SendError('aborted', 'request aborted'));
        return;
      }
      agent.request(options, (err, data) => {
        if (err) {
          const failure = attemptFailure(err, { mayRetry, retryable, aborted, timeoutMs: opts.timeoutMs });
          if (failure) reject(failure);
          else attempt(false);
          return;
        }
        const res = data.body as unknown as BackendResponse;
        res.statusCode = data.statusCode;
        res.headers = data.headers as IncomingHttpHeaders;
        res.complete = false;
        res.once('end', () => (res.complete = true));
        // Registered first, so a cut-off body reads as a timeout to every later 'close' listener.
        res.on('error', (e: NodeJS.ErrnoException) => {
          if (e.code === 'UND_ERR_BODY_TIMEOUT') timedOut.add(res);
        });
        response = res;
        resolve(res);
      });
    }
  });
}

/**
 * A response whose body its request handler gathers whole (sendWhole): no stream between the socket
 * and the text, where a streamed body costs a Readable, its listeners and a tick per event (~10 µs
 * of a small proxied call's CPU). Its status and headers are known when sendWhole resolves.
 */
export class WholeResponse {
  complete = false;
  private readonly parts: Buffer[] = [];
  private failure: SendError | null = null;
  private waiting: { resolve(text: string): void; reject(e: SendError): void } | null = null;

  constructor(
    readonly statusCode: number,
    readonly headers: IncomingHttpHeaders,
  ) {}

  /** The whole body as text; rejects as readText does when the body was cut off. */
  text(): Promise<string> {
    if (this.complete) return Promise.resolve(this.body());
    if (this.failure) return Promise.reject(this.failure);
    return new Promise((resolve, reject) => {
      this.waiting = { resolve, reject };
    });
  }

  push(chunk: Buffer): void {
    this.parts.push(chunk);
  }

  end(): void {
    this.complete = true;
    this.waiting?.resolve(this.body());
  }

  /** The body was cut off: silent past the timeout, or the connection closed (or was aborted). */
  fail(err: Error & { code?: string }): void {
    if (this.complete || this.failure) return;
    this.failure =
      err.code === 'UND_ERR_BODY_TIMEOUT'
        ? new SendError('timeout', 'backend went silent mid-response (timeout)')
        : new SendError('other', 'backend closed the connection mid-response');
    this.waiting?.reject(this.failure);
  }

  private body(): string {
    const p = this.parts;
    return (p.length === 1 ? p[0] : Buffer.concat(p)).toString('utf8');
  }
}

/**
 * `send` for a body read whole (a non-streamed call): over plain HTTP, a WholeResponse its handler
 * fills as the bytes arrive; through a node's tunnel, the tunnel's response. Retries, timeouts,
 * aborts and failures are send's.
 */
export function sendWhole(url: string, opts: SendOptions): Promise<BackendResponse | WholeResponse> {
  if (url.charCodeAt(0) === 119 /* w */) return send(url, opts);
  const { request, retryable } = requestOf(targetOf(url), opts);
  let aborted = false;
  let abortRequest: ((err: Error) => void) | null = null;
  const abortError = () => Object.assign(new Error('request aborted'), { code: 'UND_ERR_ABORTED' });
  opts.onRequest?.(() => {
    if (aborted) return;
    aborted = true;
    abortRequest?.(abortError());
  });
  return new Promise((resolve, reject) => {
    const attempt = (mayRetry: boolean): void => {
      if (aborted) {
        reject(new SendError('aborted', 'request aborted'));
        return;
      }
      let res: WholeResponse | null = null;
      agent.dispatch(request, {
        onConnect(abort: (err: Error) => void) {
          abortRequest = abort;
          if (aborted) abort(abortError());
        },
        onHeaders(status: number, raw: Buffer[]) {
          if (status < 200) return true; // informational: the answer follows
          res = new WholeResponse(status, parseHeaders(raw) as IncomingHttpHeaders);
          resolve(res);
          return true;
        },
        onData(chunk: Buffer) {
          res?.push(chunk);
          return true;
        },
        onComplete() {
          res?.end();
        },
        onError(err: Error & { code?: string }) {
          if (res) return res.fail(err);
          const failure = attemptFailure(err, { mayRetry, retryable, aborted, timeoutMs: opts.timeoutMs });
          if (failure) reject(failure);
          else attempt(false);
        },
      } as Dispatcher.DispatchHandler);
    };
    attempt(retryable);
  });
}

const CONNECT_CODES = new Set([
  'ECONNREFUSED',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'UND_ERR_CONNECT_TIMEOUT',
]);

function reusedSocketClosed(err: Error & { code?: string; socket?: { bytesRead?: number } }): boolean {
  if (err.code === 'UND_ERR_SOCKET') return (err.socket?.bytesRead ?? 0) > 0;
  return err.code === 'ECONNRESET' || err.code === 'EPIPE';
}

function sendError(err: Error & { code?: string }, aborted: boolean, timeoutMs: number): SendError {
  if (aborted || err.code === 'UND_ERR_ABORTED') return new SendError('aborted', 'request aborted');
  if (err.code === 'UND_ERR_HEADERS_TIMEOUT')
    return new SendError('timeout', `backend did not answer within ${timeoutMs} ms`);
  if (err.code && CONNECT_CODES.has(err.code))
    return new SendError('connect', `cannot reach backend: ${err.code} ${err.message}`);
  return new SendError('other', err.message);
}

/** Responses whose socket went idle past the timeout (so a cut-off body reads as a timeout). */
export const timedOut = new WeakSet<object>();

/** The whole response body as text (the socket idle timeout of `send` still applies). */
export function readText(res: BackendResponse | WholeResponse): Promise<string> {
  if (res instanceof WholeResponse) return res.text();
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    res.on('data', (c: Buffer) => parts.push(c));
    res.on('end', () => resolve(Buffer.concat(parts).toString('utf8')));
    const cut = () =>
      reject(
        timedOut.has(res)
          ? new SendError('timeout', 'backend went silent mid-response (timeout)')
          : new SendError('other', 'backend closed the connection mid-response'),
      );
    res.on('error', (e) => (e instanceof SendError ? reject(e) : cut()));
    res.on('aborted', cut);
    res.on('close', () => {
      if (!res.complete) cut();
    });
  });
}
