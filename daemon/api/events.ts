// GET /api/events: a WebSocket that streams every store event as one JSON DaemonEvent per message.
// Browsers cannot set headers, so the token may also come as ?token=. ?run_id= keeps one run's events.
import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { type WebSocket, WebSocketServer } from 'ws';
import type { DaemonContext } from '../context';
import { EventsQuery } from '../protocol/api';
import type { DaemonEvent } from '../protocol/events';
import { authorize, bearerToken } from './auth';
import { ApiError, errorBody, toApiError, validationError } from './errors';

export const EVENTS_PATH = '/api/events';
/** A client that reads slower than this much backlog is dropped rather than buffered without bound. */
const MAX_BACKLOG_BYTES = 64 * 1024 * 1024;

function reject(socket: Duplex, err: ApiError): void {
  const body = JSON.stringify(errorBody(err));
  const reason =
    { 400: 'Bad Request', 401: 'Unauthorized', 403: 'Forbidden', 404: 'Not Found' }[err.status] ?? 'Error';
  socket.end(
    `HTTP/1.1 ${err.status} ${reason}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}

/** The run an event belongs to (null: not a run's event); rollout → run ids are cached per connection. */
function runOf(
  ctx: DaemonContext,
  event: DaemonEvent,
  runByRollout: Map<string, string | null>,
): string | null | Promise<string | null> {
  const byRollout = (rolloutId: string | null) => {
    if (!rolloutId) return null;
    const known = runByRollout.get(rolloutId);
    if (known !== undefined) return known;
    return ctx.store.getRollout(rolloutId).then((r) => {
      runByRollout.set(rolloutId, r?.run_id ?? null);
      return r?.run_id ?? null;
    });
  };
  switch (event.type) {
    case 'run':
      return event.run.id;
    case 'run_metrics':
      return event.metrics.run_id;
    case 'rollout':
      if (runByRollout.size > 100_000) runByRollout.clear();
      runByRollout.set(event.rollout.id, event.rollout.run_id);
      return event.rollout.run_id;
    case 'llm_call':
      return byRollout(event.call.rollout_id);
    case 'reward':
      return byRollout(event.reward.rollout_id);
    case 'model_version':
      return event.run_id;
    default:
      return null;
  }
}

/** Each event is serialized once, however many sockets receive it. */
const serialized = new WeakMap<DaemonEvent, string>();
function serialize(event: DaemonEvent): string {
  let text = serialized.get(event);
  if (text === undefined) {
    text = JSON.stringify(event);
    serialized.set(event, text);
  }
  return text;
}

function stream(ctx: DaemonContext, ws: WebSocket, runId: string | undefined): void {
  const runByRollout = new Map<string, string | null>();
  let chain: Promise<void> = Promise.resolve();
  const send = (event: DaemonEvent) => {
    if (ws.readyState !== ws.OPEN) return;
    if (ws.bufferedAmount > MAX_BACKLOG_BYTES) {
      ctx.log('events client too slow, dropped', { backlog: ws.bufferedAmount });
      ws.terminate();
      return;
    }
    ws.send(serialize(event));
  };
  const unsubscribe = ctx.store.subscribe((event) => {
    if (!runId) return send(event);
    // Keep the order of events even when a rollout's run must be looked up first.
    chain = chain
      .then(async () => {
        if ((await runOf(ctx, event, runByRollout)) === runId) send(event);
      })
      .catch((err) => ctx.log('events filter failed', { error: String(err) }));
  });
  ws.on('close', unsubscribe);
  ws.on('error', () => ws.terminate());
}

export function attachEvents(server: Server, ctx: DaemonContext): { close(): Promise<void> } {
  const wss = new WebSocketServer({ noServer: true, maxPayload: 64 * 1024 });
  const onUpgrade = (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    if (url.pathname !== EVENTS_PATH) {
      // Nobody else listens for upgrades on this path: answer rather than leave the socket hanging.
      if (server.listeners('upgrade').length === 1)
        reject(socket, new ApiError(404, 'not_found', `no WebSocket at ${url.pathname}`));
      return;
    }
    socket.on('error', () => socket.destroy());
    (async () => {
      const parsed = EventsQuery.safeParse(Object.fromEntries(url.searchParams));
      if (!parsed.success) throw validationError(parsed.error, 'query');
      await authorize(ctx, 'token', bearerToken(req.headers) ?? parsed.data.token ?? null, undefined);
      const runId = parsed.data.run_id;
      if (runId && !(await ctx.store.getRun(runId))) {
        throw new ApiError(404, 'not_found', `no run with id ${JSON.stringify(runId)}`, 'run_id');
      }
      wss.handleUpgrade(req, socket, head, (ws) => stream(ctx, ws, runId));
    })().catch((err) => reject(socket, toApiError(err, 0)));
  };
  server.on('upgrade', onUpgrade);
  return {
    close: async () => {
      server.off('upgrade', onUpgrade);
      for (const client of wss.clients) client.terminate();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
    },
  };
}
