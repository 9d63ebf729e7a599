// The daemon's end of one node agent's WebSocket: connects out (ws:// or wss://, the node's token as
// a bearer header), says hello with the protocol version, reconnects with backoff when the socket
// drops, and multiplexes requests by id. Replies, streamed frames and the node's health arrive here.
import { randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import type WebSocket from 'ws';
import { decodeFrame, encodeFrame, type Frame } from '../../protocol/frames';
import { NODE_PROTOCOL_VERSION, type NodeHealth, type NodeMessage, type NodeRole } from '../../protocol/node';

/** ws, required with a run's first node connection: a daemon without nodes never holds it. */
const webSocket = () => createRequire(import.meta.url)('ws') as typeof WebSocket;

/** The node refused us for good (token, protocol version, role): retrying will not help. */
export class NodeRefused extends Error {}

/** The connection dropped while a request was open. */
export class NodeDisconnected extends Error {}

export interface NodeConnectionOptions {
  url: string;
  token: string | undefined;
  /** The role the run expects the node to have. */
  role: NodeRole;
  log: (message: string, detail?: Record<string, unknown>) => void;
  /** Trusted CA certificates (PEM) for wss:// with a self-signed certificate. */
  ca?: string;
}

type Handler = { onFrame(frame: Frame): void; onClose(err: Error): void };

/** Above this many bytes queued on the socket, senders wait (back-pressure). */
const HIGH_WATER = 8 * 1024 * 1024;

export class NodeConnection {
  private ws: WebSocket | null = null;
  private readonly handlers = new Map<string, Handler>();
  private readonly openListeners = new Set<() => void>();
  private readonly closeListeners = new Set<() => void>();
  private readonly healthListeners = new Set<(health: NodeHealth) => void>();
  private welcomed = false;
  private closed = false;
  private attempt = 0;
  private seq = 0;
  private readonly prefix = randomBytes(4).toString('hex');
  private retryTimer: NodeJS.Timeout | null = null;
  private readyWaiters: { resolve(): void; reject(err: Error): void }[] = [];
  nodeId: string | null = null;
  health: NodeHealth | null = null;
  healthAt: number | null = null;
  lastError: string | null = null;
  /** Set when the node refused us; no reconnects after that. */
  refused: NodeRefused | null = null;
  connectedSince: number | null = null;

  constructor(readonly options: NodeConnectionOptions) {
    this.connect();
  }

  get url(): string {
    return this.options.url;
  }

  get open(): boolean {
    return this.welcomed && this.ws !== null && this.ws.readyState === this.ws.OPEN;
  }

  /** A fresh request id. */
  nextId(): string {
    return `${this.prefix}-${++this.seq}`;
  }

  /** Resolves once welcomed (now or after a reconnect); rejects when refused or closed, or after `timeoutMs`. */
  ready(timeoutMs = 30_000): Promise<void> {
    if (this.open) return Promise.resolve();
    if (this.refused) return Promise.reject(this.refused);
    if (this.closed) return Promise.reject(new NodeDisconnected(`connection to node ${this.url} is closed`));
    return new Promise((resolve, reject) => {
      const waiter = {
        resolve: () => {
          clearTimeout(timer);
          resolve();
        },
        reject: (err: Error) => {
          clearTimeout(timer);
          reject(err);
        },
      };
      const timer = setTimeout(() => {
        this.readyWaiters = this.readyWaiters.filter((w) => w !== waiter);
        // Not NodeDisconnected: a caller that retries on disconnects gives up here.
        reject(
          new Error(
            `node ${this.url} not reachable within ${Math.round(timeoutMs / 1000)}s${this.lastError ? `: ${this.lastError}` : ''}`,
          ),
        );
      }, timeoutMs);
      this.readyWaiters.push(waiter);
    });
  }

  onOpen(listener: () => void): () => void {
    this.openListeners.add(listener);
    return () => this.openListeners.delete(listener);
  }

  /** Each health report (the first comes with the welcome, then every few seconds). */
  onHealth(listener: (health: NodeHealth) => void): () => void {
    this.healthListeners.add(listener);
    return () => this.healthListeners.delete(listener);
  }

  onClose(listener: () => void): () => void {
    this.closeListeners.add(listener);
    return () => this.closeListeners.delete(listener);
  }

  /** Sends one frame; waits while the socket's queue is above the high-water mark. */
  async send(header: NodeMessage, payload?: Uint8Array): Promise<void> {
    const ws = this.ws;
    if (!ws || !this.open) throw new NodeDisconnected(`node ${this.url} is not connected`);
    while (ws.bufferedAmount > HIGH_WATER) {
      await new Promise((r) => setTimeout(r, 5));
      if (ws.readyState !== ws.OPEN) throw new NodeDisconnected(`node ${this.url} disconnected`);
    }
    ws.send(encodeFrame(header, payload));
  }

  /** Frames carrying `id` go to `handler` until it is removed. */
  listen(id: string, handler: Handler): () => void {
    this.handlers.set(id, handler);
    return () => {
      if (this.handlers.get(id) === handler) this.handlers.delete(id);
    };
  }

  /**
   * Sends a request and resolves with its final reply (anything but the `streamed` message types,
   * which go to `onStream`); an `error` reply rejects with the node's message.
   */
  request(
    header: NodeMessage & { id: string },
    payload?: Uint8Array,
    options: {
      streamed?: readonly string[];
      onStream?: (frame: Frame) => void;
      timeoutMs?: number;
      /** Stops waiting for the reply (the daemon is halting). */
      signal?: AbortSignal;
    } = {},
  ): Promise<Frame> {
    return new Promise((resolve, reject) => {
      let timer: NodeJS.Timeout | null = null;
      const onAbort = () =>
        done(() => reject(new Error(`stopped waiting for node ${this.url} (${header.t})`)));
      const done = (fn: () => void) => {
        unlisten();
        if (timer) clearTimeout(timer);
        options.signal?.removeEventListener('abort', onAbort);
        fn();
      };
      const unlisten = this.listen(header.id, {
        onFrame: (frame) => {
          if (options.streamed?.includes(frame.header.t)) {
            options.onStream?.(frame);
            return;
          }
          if (frame.header.t === 'error') {
            const message = frame.header.message;
            done(() => reject(new Error(`node ${this.url}: ${message}`)));
          } else done(() => resolve(frame));
        },
        onClose: (err) => done(() => reject(err)),
      });
      if (options.timeoutMs) {
        timer = setTimeout(
          () =>
            done(() =>
              reject(new Error(`node ${this.url} did not answer ${header.t} within ${options.timeoutMs} ms`)),
            ),
          options.timeoutMs,
        );
      }
      if (options.signal?.aborted) return onAbort();
      options.signal?.addEventListener('abort', onAbort, { once: true });
      this.send(header, payload).catch((err) => done(() => reject(err)));
    });
  }

  close(): void {
    this.closed = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.ws?.close(1000, 'daemon closing');
    this.ws?.terminate();
    this.failPending(new NodeDisconnected(`connection to node ${this.url} closed`));
    for (const w of this.readyWaiters.splice(0))
      w.reject(new NodeDisconnected(`connection to node ${this.url} closed`));
  }

  private connect(): void {
    if (this.closed) return;
    const headers: Record<string, string> = {};
    if (this.options.token) headers.authorization = `Bearer ${this.options.token}`;
    const ws = new (webSocket())(this.url, {
      headers,
      handshakeTimeout: 10_000,
      maxPayload: 1 << 30,
      ca: this.options.ca,
      perMessageDeflate: false,
    });
    this.ws = ws;
    ws.binaryType = 'nodebuffer';
    ws.on('open', () => {
      ws.send(encodeFrame({ t: 'hello', protocol_version: NODE_PROTOCOL_VERSION, daemon: 'harness-rl' }));
    });
    ws.on('unexpected-response', (_req, res) => {
      const parts: Buffer[] = [];
      res.on('data', (c: Buffer) => parts.push(c));
      res.on('end', () => {
        const body = Buffer.concat(parts).toString('utf8').slice(0, 300);
        const reason =
          res.statusCode === 401
            ? `node ${this.url} refused the token (401): ${body || 'unauthorized'}; check the run config's token`
            : `node ${this.url} answered ${res.statusCode} to the WebSocket upgrade: ${body}`;
        if (res.statusCode === 401 || res.statusCode === 403) this.refuse(reason);
        else this.lastError = reason;
        ws.terminate();
      });
    });
    ws.on('message', (data: Buffer, isBinary) => {
      if (!isBinary) return;
      let frame: Frame;
      try {
        frame = decodeFrame(data);
      } catch (err) {
        this.options.log('node sent a bad frame', { node: this.url, error: (err as Error).message });
        return;
      }
      this.onFrame(frame);
    });
    ws.on('error', (err) => {
      this.lastError = `cannot reach node ${this.url}: ${err.message}`;
    });
    ws.on('close', () => {
      if (this.ws !== ws) return;
      const wasOpen = this.welcomed;
      this.welcomed = false;
      this.connectedSince = null;
      this.failPending(new NodeDisconnected(`node ${this.url} disconnected`));
      if (wasOpen) {
        this.options.log('node disconnected', { node: this.url });
        for (const l of this.closeListeners) l();
      }
      if (this.closed || this.refused) return;
      const delay = Math.min(5000, 100 * 2 ** Math.min(this.attempt++, 6));
      this.retryTimer = setTimeout(() => this.connect(), delay);
      this.retryTimer.unref();
    });
  }

  private refuse(message: string): void {
    this.refused = new NodeRefused(message);
    this.lastError = message;
    this.options.log('node refused the connection', { node: this.url, error: message });
    for (const w of this.readyWaiters.splice(0)) w.reject(this.refused);
  }

  private onFrame(frame: Frame): void {
    const h = frame.header;
    switch (h.t) {
      case 'welcome': {
        if (h.protocol_version !== NODE_PROTOCOL_VERSION) {
          this.refuse(
            `node ${this.url} speaks protocol version ${h.protocol_version}, this daemon ${NODE_PROTOCOL_VERSION}: update one of them`,
          );
          this.ws?.close();
          return;
        }
        if (h.role !== this.options.role) {
          this.refuse(`node ${this.url} has role ${h.role}, but the run uses it as ${this.options.role}`);
          this.ws?.close();
          return;
        }
        this.nodeId = h.node_id;
        this.setHealth(h.health);
        this.welcomed = true;
        this.attempt = 0;
        this.lastError = null;
        this.connectedSince = Date.now();
        this.options.log('node connected', { node: this.url, node_id: h.node_id, role: h.role });
        for (const w of this.readyWaiters.splice(0)) w.resolve();
        for (const l of this.openListeners) l();
        return;
      }
      case 'refused':
        this.refuse(`node ${this.url} refused the connection: ${h.message}`);
        this.ws?.close();
        return;
      case 'health':
        this.setHealth(h.health);
        return;
      default: {
        const id = 'id' in h ? h.id : null;
        const handler = id ? this.handlers.get(id) : undefined;
        handler?.onFrame(frame);
      }
    }
  }

  private setHealth(health: NodeHealth): void {
    this.health = health;
    this.healthAt = Date.now();
    for (const l of this.healthListeners) l(health);
  }

  private failPending(err: Error): void {
    const handlers = [...this.handlers.values()];
    this.handlers.clear();
    for (const h of handlers) h.onClose(err);
  }
}
