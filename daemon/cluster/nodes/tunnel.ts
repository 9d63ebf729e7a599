// The proxy's HTTP requests to an inference node, tunnelled over the node's WebSocket: each request
// is an `http` frame (body as payload), the answer `http_head`, `http_data`… and `http_end` frames
// with the same id. The response looks to the proxy like any backend response (BackendResponse).

import type { IncomingHttpHeaders } from 'node:http';
import { Readable } from 'node:stream';
import { type BackendResponse, SendError, type SendOptions, type Transport, timedOut } from '../../http';
import type { NodeConnection } from './connection';

class TunnelResponse extends Readable implements BackendResponse {
  statusCode: number;
  headers: IncomingHttpHeaders;
  complete = false;

  constructor(
    status: number,
    headers: Record<string, string>,
    private readonly cancel: () => void,
  ) {
    super();
    this.statusCode = status;
    this.headers = headers;
  }

  override _read(): void {}

  override _destroy(err: Error | null, callback: (error?: Error | null) => void): void {
    if (!this.complete) this.cancel();
    callback(err);
  }

  /** The body was cut off: consumers see it as a response closed before its end. */
  cut(timeout: boolean): void {
    if (this.destroyed) return;
    if (timeout) timedOut.add(this);
    this.emit('aborted');
    this.destroy();
  }
}

export class NodeTunnel implements Transport {
  constructor(
    private readonly node: NodeConnection,
    /** Beyond the request's own deadline (which the node enforces), how long a silent node gets. */
    private readonly idleGraceMs = 5_000,
  ) {}

  send(path: string, opts: SendOptions): Promise<BackendResponse> {
    const node = this.node;
    if (!node.open)
      return Promise.reject(
        new SendError(
          'connect',
          `node ${node.url} is not connected${node.lastError ? `: ${node.lastError}` : ''}`,
        ),
      );
    const id = node.nextId();
    const headers: Record<string, string> = { ...opts.headers };
    if (opts.body !== undefined) headers['content-type'] ??= 'application/json';
    return new Promise((resolve, reject) => {
      let response: TunnelResponse | null = null;
      let settled = false;
      let idle: NodeJS.Timeout | null = null;
      const cancel = () => {
        if (idle) clearTimeout(idle);
        unlisten();
        node.send({ t: 'cancel', id }).catch(() => {});
      };
      const stop = () => {
        if (idle) clearTimeout(idle);
        unlisten();
      };
      // The node enforces deadline_ms against its backend; this bounds a node that itself goes silent.
      const touch = () => {
        if (idle) clearTimeout(idle);
        idle = setTimeout(() => {
          cancel();
          const message = `node ${node.url} sent nothing for ${opts.timeoutMs + this.idleGraceMs} ms`;
          if (!settled) {
            settled = true;
            reject(new SendError('timeout', message));
          } else response?.cut(true);
        }, opts.timeoutMs + this.idleGraceMs);
        idle.unref();
      };
      touch();
      const unlisten = node.listen(id, {
        onFrame: ({ header: h, payload }) => {
          touch();
          if (h.t === 'http_head') {
            settled = true;
            response = new TunnelResponse(h.status, h.headers, cancel);
            resolve(response);
          } else if (h.t === 'http_data') {
            // The payload is a view of the WebSocket message: the consumer may keep it.
            response?.push(payload);
          } else if (h.t === 'http_end') {
            stop();
            if (response) {
              response.complete = true;
              response.push(null);
            }
          } else if (h.t === 'http_error' || h.t === 'error') {
            // `error`: the node refused the request itself (e.g. a frame it could not validate).
            const kind = h.t === 'error' ? 'other' : h.kind;
            stop();
            if (!settled) {
              settled = true;
              reject(new SendError(kind, `node ${node.url}: ${h.message}`));
            } else response?.cut(kind === 'timeout');
          }
        },
        onClose: (err) => {
          if (idle) clearTimeout(idle);
          if (!settled) {
            settled = true;
            reject(
              new SendError('other', `node ${node.url} connection lost before the answer: ${err.message}`),
            );
          } else response?.cut(false);
        },
      });
      opts.onRequest?.(() => {
        if (!settled) {
          settled = true;
          reject(new SendError('aborted', 'request aborted'));
        }
        if (idle) clearTimeout(idle);
        if (response) response.destroy();
        else cancel();
      });
      const body =
        opts.body === undefined
          ? undefined
          : typeof opts.body === 'string'
            ? Buffer.from(opts.body)
            : opts.body;
      node
        .send(
          {
            t: 'http',
            id,
            method: (opts.method ?? 'POST') === 'GET' ? 'GET' : 'POST',
            path,
            headers,
            deadline_ms: opts.timeoutMs,
          },
          body,
        )
        .catch((err: Error) => {
          stop();
          if (!settled) {
            settled = true;
            reject(new SendError('connect', err.message));
          }
        });
    });
  }
}
