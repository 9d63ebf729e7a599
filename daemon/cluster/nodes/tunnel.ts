// The proxy's HTTP requests to an inference node, tunnelled over the node's WebSocket: each request
// is an `http` frame (body as payload), the answer `http_head`, `http_data`… and `http_end` frames
// with the same id. The response looks to the proxy like any backend response (BackendResponse).

import type { IncomingHttpHeaders } from 'node:http';
import { Readable } from 'node:stream';
import { type BackendResponse, SendError, type SendOptions, type Transport, timedOut } from '../../http';
import type { Frame } from '../../protocol/frames';
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

/**
 * One request through the tunnel: its answer resolved at its head (or rejected before it), its body
 * pushed to the response frame by frame, a node that goes silent bounded, a cancel sent when the
 * caller gives up.
 */
class TunnelCall {
  private response: TunnelResponse | null = null;
  private settled = false;
  private idle: NodeJS.Timeout | null = null;
  private unlisten: () => void = () => {};

  constructor(
    private readonly node: NodeConnection,
    private readonly id: string,
    private readonly idleMs: number,
    private readonly resolve: (response: BackendResponse) => void,
    private readonly reject: (err: SendError) => void,
  ) {}

  listen(): void {
    this.touch();
    this.unlisten = this.node.listen(this.id, {
      onFrame: (frame) => this.onFrame(frame),
      onClose: (err) => {
        this.clearIdle();
        this.fail(
          new SendError('other', `node ${this.node.url} connection lost before the answer: ${err.message}`),
        );
      },
    });
  }

  /** The caller gave up: its answer is rejected, or its body cut (which cancels it at the node). */
  abort(): void {
    this.settle(new SendError('aborted', 'request aborted'));
    this.clearIdle();
    if (this.response) this.response.destroy();
    else this.cancel();
  }

  /** The request could not be sent. */
  unsent(err: Error): void {
    this.stop();
    this.settle(new SendError('connect', err.message));
  }

  private onFrame({ header: h, payload }: Frame): void {
    this.touch();
    if (h.t === 'http_head') {
      this.settled = true;
      this.response = new TunnelResponse(h.status, h.headers, () => this.cancel());
      this.resolve(this.response);
    } else if (h.t === 'http_data') {
      // The payload is a view of the WebSocket message: the consumer may keep it.
      this.response?.push(payload);
    } else if (h.t === 'http_end') {
      this.stop();
      if (this.response) {
        this.response.complete = true;
        this.response.push(null);
      }
    } else if (h.t === 'http_error' || h.t === 'error') {
      // `error`: the node refused the request itself (e.g. a frame it could not validate).
      const kind = h.t === 'error' ? 'other' : h.kind;
      this.stop();
      this.fail(new SendError(kind, `node ${this.node.url}: ${h.message}`), kind === 'timeout');
    }
  }

  // The node enforces deadline_ms against its backend; this bounds a node that itself goes silent.
  private touch(): void {
    this.clearIdle();
    this.idle = setTimeout(() => {
      this.cancel();
      this.fail(new SendError('timeout', `node ${this.node.url} sent nothing for ${this.idleMs} ms`), true);
    }, this.idleMs);
    this.idle.unref();
  }

  /** Before the head: the answer rejected; after it: the body cut (a timeout's marked as one). */
  private fail(err: SendError, timeout = false): void {
    if (!this.settle(err)) this.response?.cut(timeout);
  }

  /** Rejects the answer unless it was settled; whether it did. */
  private settle(err: SendError): boolean {
    if (this.settled) return false;
    this.settled = true;
    this.reject(err);
    return true;
  }

  private cancel(): void {
    this.stop();
    this.node.send({ t: 'cancel', id: this.id }).catch(() => {});
  }

  private stop(): void {
    this.clearIdle();
    this.unlisten();
  }

  private clearIdle(): void {
    if (this.idle) clearTimeout(this.idle);
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
      const call = new TunnelCall(node, id, opts.timeoutMs + this.idleGraceMs, resolve, reject);
      call.listen();
      opts.onRequest?.(() => call.abort());
      const body =
        opts.body === undefined
          ? undefined
          : typeof opts.body === 'string'
            ? Buffer.from(opts.body)
            : opts.body;
      const method = (opts.method ?? 'POST') === 'GET' ? 'GET' : 'POST';
      node
        .send({ t: 'http', id, method, path, headers, deadline_ms: opts.timeoutMs }, body)
        .catch((err: Error) => call.unsent(err));
    });
  }
}
