// The proxy's own front on the daemon's HTTP server: a request under `/v1/…`, `/v1beta/models/…` or
// `/r/<rollout>/…` above them goes from node:http straight to its proxy handler; every other request
// goes on to fastify (the API, the cluster's routes). Fastify's router, hooks, body parsing and reply
// pipeline cost more per proxied call than the recording does (bench `proxy.profile`), and the proxy
// answers in its harness's wire format anyway.
import {
  createServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type RequestListener,
  type Server,
  type ServerResponse,
} from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { discardBody } from '../api/body';
import { errorText } from '../error-text';
import { Id, isId } from '../protocol/bounds';
import { ProxyError } from './errors';

/** Takes a request (true) or leaves it to fastify (false). */
export type FrontHandler = (req: IncomingMessage, res: ServerResponse) => boolean;

interface Slot {
  /** Offered each request in turn until one takes it. */
  handlers: FrontHandler[];
}

const FRONT = Symbol('harness-rl proxy front');

/**
 * Fastify's `serverFactory` for a daemon that serves the proxy: node:http (or, with `tls`, node:https)
 * servers that offer each request to the proxy's front first (every server fastify makes for one
 * listen shares the front).
 */
export function proxyServerFactory(tls?: {
  cert: string;
  key: string;
}): (handler: RequestListener, options: Record<string, unknown>) => Server {
  const slot: Slot = { handlers: [] };
  return (fastifyHandler, options) => {
    const handler: RequestListener = (req, res) => {
      let taken = false;
      try {
        for (const h of slot.handlers) {
          taken = h(req, res);
          if (taken) break;
        }
      } catch (err) {
        // The front decodes and checks everything before it can throw; should a bug still throw here,
        // outside any handler, it must cost one request, never the process.
        if (!res.headersSent) {
          const e = new ProxyError(500, `proxy error: ${errorText(err)}`);
          sendJson(res, 500, JSON.stringify({ error: { message: e.message, type: 'server_error' } }));
        } else res.destroy();
        return;
      }
      if (!taken) fastifyHandler(req, res);
    };
    // An https.Server is a net.Server like http.Server, with the same request and timeout surface.
    const server = tls ? (createHttpsServer(tls, handler) as unknown as Server) : createServer(handler);
    // Fastify sets its timeouts only on servers it makes itself. Node's own keep-alive limit (5 s)
    // would close a harness's idle socket whenever a tool step between two calls ran longer, and a
    // client that reuses it just as it closes gets a reset instead of an answer.
    const option = (name: string) => (typeof options[name] === 'number' ? (options[name] as number) : null);
    server.keepAliveTimeout = option('keepAliveTimeout') ?? server.keepAliveTimeout;
    server.requestTimeout = option('requestTimeout') ?? server.requestTimeout;
    server.setTimeout(option('connectionTimeout') ?? 0);
    const perSocket = option('maxRequestsPerSocket');
    if (perSocket) server.maxRequestsPerSocket = perSocket;
    Object.defineProperty(server, FRONT, { value: slot });
    return server;
  };
}

/**
 * Puts `handler` in front of fastify on a server made by proxyServerFactory, after the handlers put
 * there before (`first`: before them: the OTLP receiver takes `/v1/traces` ahead of the proxy).
 */
export function installFront(server: Server, handler: FrontHandler, first = false): void {
  const slot = (server as unknown as Record<symbol, Slot | undefined>)[FRONT];
  if (!slot)
    throw new Error('the proxy needs a server made by Fastify({ serverFactory: proxyServerFactory() })');
  if (first) slot.handlers.unshift(handler);
  else slot.handlers.push(handler);
}

/** A proxied request as its handler sees it. */
export interface ProxyRequest {
  method: string;
  url: string;
  /** The path without the rollout prefix and the query: `/v1/chat/completions`. */
  path: string;
  headers: IncomingHttpHeaders;
  /** `/r/<rid>/…`: the rollout; undefined for unscoped calls (the active recording). */
  rid: string | undefined;
  /** The query string, without its `?`. */
  search: string;
  /** The parsed JSON body (undefined when empty), once read. */
  body: unknown;
  /** The body's text, once read. */
  raw: string | undefined;
  /** What is wrong with the URL itself (a malformed escape, a bad rollout id): answered as a 400. */
  problem: ProxyError | null;
}

/**
 * A path segment from a URL, decoded; a 400 naming `field` when its percent-escapes are malformed
 * (decodeURIComponent throws a URIError on `%E0%A4%A`, which outside a handler would end the process).
 */
export function decodeSegment(text: string, field: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    throw new ProxyError(
      400,
      `${field}: malformed percent-escape in ${JSON.stringify(text.slice(0, 200))}`,
      field,
      'invalid_url',
    );
  }
}

/** The proxy request of `url`, or null when the URL is not the proxy's. */
export function proxyRequest(req: IncomingMessage): ProxyRequest | null {
  const url = req.url ?? '/';
  const q = url.indexOf('?');
  let path = q < 0 ? url : url.slice(0, q);
  let rid: string | undefined;
  let problem: ProxyError | null = null;
  if (path.startsWith('/r/')) {
    const end = path.indexOf('/', 3);
    if (end <= 3) return null;
    try {
      rid = decodeSegment(path.slice(3, end), 'rollout_id');
      const checked = isId(rid) ? null : Id.safeParse(rid);
      if (checked && !checked.success)
        throw new ProxyError(
          400,
          `rollout_id: ${checked.error.issues[0]?.message}`,
          'rollout_id',
          'invalid_url',
        );
    } catch (e) {
      problem = e as ProxyError;
      rid = undefined;
    }
    path = path.slice(end);
  }
  if (!path.startsWith('/v1/') && !path.startsWith('/v1beta/models/')) return null;
  return {
    method: req.method ?? 'GET',
    url,
    path,
    headers: req.headers,
    rid,
    search: q < 0 ? '' : url.slice(q + 1),
    body: undefined,
    raw: undefined,
    problem,
  };
}

/**
 * The request body as text; a ProxyError 413 past `limit` bytes (by its content-length, or as read),
 * answered once the rest is read and dropped (discardBody), or with `Connection: close` past its bound.
 */
export function readBody(req: IncomingMessage, res: ServerResponse, limit: number): Promise<string> {
  return readBytes(req, res, limit).then((b) => b.toString('utf8'));
}

/** The request body as bytes, bounded like readBody. */
export function readBytes(req: IncomingMessage, res: ServerResponse, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    let refused = false;
    const tooLarge = (read: number) => {
      refused = true;
      return discardBody(req, read).then((ended) => {
        if (!ended) res.setHeader('connection', 'close');
        reject(
          new ProxyError(413, `request body too large (limit ${limit} bytes)`, 'body', 'body_too_large'),
        );
      });
    };
    const declared = Number(req.headers['content-length']);
    if (declared > limit) return void tooLarge(0);
    const parts: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > limit) {
        req.removeAllListeners('data');
        parts.length = 0;
        void tooLarge(size);
      } else parts.push(c);
    });
    req.on('end', () => refused || resolve(parts.length === 1 ? parts[0] : Buffer.concat(parts)));
    req.on('error', reject);
  });
}

/** The content type of the proxy's own JSON answers. */
export const JSON_TYPE = { 'content-type': 'application/json; charset=utf-8' } as const;

/** A JSON answer (already serialised) with its length. */
export function sendJson(
  res: ServerResponse,
  status: number,
  text: string,
  headers: Record<string, string> = {},
): void {
  res.writeHead(status, {
    ...JSON_TYPE,
    'content-length': Buffer.byteLength(text),
    ...headers,
  });
  res.end(text);
}
