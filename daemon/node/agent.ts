// The node agent (`harness-rl node`): runs on a GPU machine, in front of an inference backend (vLLM,
// or the reference engine) or a trainer. One authenticated port: the daemon connects in over a
// WebSocket (ws://, or wss:// with --tls-cert/--tls-key) with the node's token as a bearer header,
// says hello with its protocol version, and from then on sends requests multiplexed by id.
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { createServer as createHttpServer, type IncomingMessage, type Server } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import WebSocket, { WebSocketServer } from 'ws';
import { decodeFrame, encodeFrame, type Frame } from '../protocol/frames';
import { NODE_PROTOCOL_VERSION, type NodeHealth, type NodeMessage, type NodeRole } from '../protocol/node';
import { gpuHealth } from './gpu';

/** Where a role sends its replies: one connected daemon. */
export interface Peer {
  send(header: NodeMessage, payload?: Uint8Array): Promise<void>;
  readonly closed: boolean;
}

/** What the node does: inference (tunnelled HTTP + weight loads) or training. */
export interface Role {
  readonly role: NodeRole;
  readonly backend: string;
  start(): Promise<void>;
  health(): Omit<NodeHealth, 'role' | 'backend' | 'gpus' | 'uptime_s'>;
  handle(frame: Frame, peer: Peer): void;
  /** The daemon connection closed: drop what only it was waiting for. */
  disconnected?(peer: Peer): void;
  close(): Promise<void>;
}

export interface NodeAgentOptions {
  host: string;
  port: number;
  token: string;
  tls?: { cert: string; key: string };
  role: Role;
  healthIntervalMs?: number;
  log: (message: string, detail?: Record<string, unknown>) => void;
}

export interface NodeAgent {
  /** ws://host:port or wss://host:port */
  url: string;
  port: number;
  nodeId: string;
  close(): Promise<void>;
}

const HIGH_WATER = 8 * 1024 * 1024;

function tokenMatches(header: string | undefined, token: string): boolean {
  const m = /^Bearer\s+(.+)$/i.exec(header ?? '');
  if (!m) return false;
  const a = Buffer.from(m[1].trim());
  const b = Buffer.from(token);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** What each daemon connection needs of the agent. */
interface Connections {
  role: Role;
  log: NodeAgentOptions['log'];
  nodeId: string;
  health: () => NodeHealth;
  /** The welcomed connections, which get the health frames. */
  peers: Set<WebSocket>;
}

/** A connection as a role sees it: frames sent as the socket's buffer allows, nothing once it closed. */
function peerOf(ws: WebSocket): Peer {
  return {
    get closed() {
      return ws.readyState !== WebSocket.OPEN;
    },
    async send(header, payload) {
      while (ws.bufferedAmount > HIGH_WATER) {
        if (ws.readyState !== WebSocket.OPEN) return;
        await new Promise((r) => setTimeout(r, 5));
      }
      if (ws.readyState === WebSocket.OPEN) ws.send(encodeFrame(header, payload));
    },
  };
}

/** Answers a daemon's first frame: a hello of this protocol version is welcomed, anything else refused. */
function greet(ws: WebSocket, peer: Peer, h: Frame['header'], c: Connections): boolean {
  if (h.t !== 'hello') {
    void peer.send({ t: 'refused', message: `expected hello first, got ${h.t}` });
    ws.close();
    return false;
  }
  if (h.protocol_version !== NODE_PROTOCOL_VERSION) {
    void peer.send({
      t: 'refused',
      message: `protocol version mismatch: the daemon speaks ${h.protocol_version}, this node ${NODE_PROTOCOL_VERSION}`,
    });
    ws.close();
    return false;
  }
  c.peers.add(ws);
  void peer.send({
    t: 'welcome',
    protocol_version: NODE_PROTOCOL_VERSION,
    node_id: c.nodeId,
    role: c.role.role,
    health: c.health(),
  });
  return true;
}

/** One daemon's connection: hello first, then every frame to the role (a bad one answered with an error). */
function serveConnection(ws: WebSocket, c: Connections): void {
  let welcomed = false;
  const peer = peerOf(ws);
  ws.on('message', (data: Buffer, isBinary) => {
    let frame: Frame;
    try {
      if (!isBinary) throw new Error('text messages are not part of the protocol');
      frame = decodeFrame(data);
    } catch (err) {
      c.log('bad frame from the daemon', { error: (err as Error).message });
      const id = /"id":"([^"]+)"/.exec(data.toString('utf8', 0, Math.min(data.length, 500)))?.[1];
      if (id) void peer.send({ t: 'error', id, message: (err as Error).message });
      return;
    }
    const h = frame.header;
    if (!welcomed) {
      welcomed = greet(ws, peer, h, c);
      return;
    }
    try {
      c.role.handle(frame, peer);
    } catch (err) {
      const id = 'id' in h ? h.id : null;
      if (id) void peer.send({ t: 'error', id, message: (err as Error).message });
    }
  });
  ws.on('close', () => {
    c.peers.delete(ws);
    c.role.disconnected?.(peer);
  });
  ws.on('error', () => {});
}

/** The node's one port: HTTP(S) that only upgrades to a WebSocket carrying the node's token. */
function nodeServers(options: NodeAgentOptions): { server: Server; wss: WebSocketServer } {
  const server: Server = options.tls
    ? createHttpsServer({ cert: options.tls.cert, key: options.tls.key })
    : createHttpServer();
  server.on('request', (_req, res) => {
    res.writeHead(426, { 'content-type': 'text/plain' });
    res.end('harness-rl node agent: connect with a WebSocket (the daemon does this)\n');
  });
  const wss = new WebSocketServer({
    server,
    maxPayload: 1 << 30,
    perMessageDeflate: false,
    verifyClient: (
      info: { req: IncomingMessage },
      done: (ok: boolean, code?: number, message?: string) => void,
    ) => {
      if (tokenMatches(info.req.headers.authorization, options.token)) done(true);
      else {
        options.log('refused a connection with a wrong or missing token', {
          from: info.req.socket.remoteAddress,
        });
        done(false, 401, 'wrong or missing node token (Authorization: Bearer <token>)');
      }
    },
  });
  return { server, wss };
}

export async function startNodeAgent(options: NodeAgentOptions): Promise<NodeAgent> {
  const { role, log } = options;
  const nodeId = `${role.role}-${randomBytes(4).toString('hex')}`;
  const started = Date.now();
  const health = (): NodeHealth => ({
    role: role.role,
    backend: role.backend,
    ...role.health(),
    gpus: gpuHealth(),
    uptime_s: (Date.now() - started) / 1000,
  });
  await role.start();

  const { server, wss } = nodeServers(options);
  const connections: Connections = { role, log, nodeId, health, peers: new Set() };
  wss.on('connection', (ws) => serveConnection(ws, connections));

  const timer = setInterval(() => {
    if (connections.peers.size === 0) return;
    const frame = encodeFrame({ t: 'health', health: health() });
    for (const ws of connections.peers) if (ws.readyState === WebSocket.OPEN) ws.send(frame);
  }, options.healthIntervalMs ?? 3000);
  timer.unref();

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  const host = options.host.includes(':') ? `[${options.host}]` : options.host;
  const url = `${options.tls ? 'wss' : 'ws'}://${host === '0.0.0.0' ? '127.0.0.1' : host}:${port}`;
  log('node agent listening', { url, role: role.role, backend: role.backend, node_id: nodeId });
  return {
    url,
    port,
    nodeId,
    close: async () => {
      clearInterval(timer);
      for (const ws of wss.clients) ws.terminate();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
      await new Promise<void>((resolve) => {
        server.closeAllConnections?.();
        server.close(() => resolve());
      });
      await role.close();
    },
  };
}
