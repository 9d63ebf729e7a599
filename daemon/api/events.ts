// GET /api/events: a WebSocket that streams every store event as one JSON DaemonEvent per message.
// Auth: the daemon token as `Authorization: Bearer`, or, for clients that cannot set headers
// (browsers, webviews), `?ticket=` with a single-use ticket from POST /api/events/ticket, so the
// token itself never travels in a URL (where proxies and access logs keep it). ?run_id= keeps one
// run's events.
import { randomBytes } from 'node:crypto';
import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import type { WebSocket, WebSocketServer } from 'ws';
import { BoundedMap } from '../bounded-map';
import type { DaemonContext } from '../context';
import { EventsQuery, type EventsTicket } from '../protocol/api';
import { withoutSecrets } from '../protocol/config';
import { FINISHED_ROLLOUT } from '../protocol/entities';
import type { DaemonEvent } from '../protocol/events';
import { authorize, bearerToken } from './auth';
import { ApiError, errorBody, toApiError, validationError } from './errors';

export const EVENTS_PATH = '/api/events';
/** A client that reads slower than this much backlog is dropped rather than buffered without bound. */
const MAX_BACKLOG_BYTES = 64 * 1024 * 1024;

/** How long a ticket may wait before it opens its socket. */
export const TICKET_TTL_MS = 30_000;
/** Outstanding tickets kept at most (the oldest go first): issuing cannot grow memory without bound. */
const MAX_TICKETS = 10_000;

/** Single-use tickets for the event socket, per daemon. */
export class EventTickets {
  private readonly expiry = new Map<string, number>();

  issue(now = Date.now()): EventsTicket {
    for (const [t, until] of this.expiry) {
      if (until > now && this.expiry.size < MAX_TICKETS) break;
      this.expiry.delete(t);
    }
    const ticket = `hrt_${randomBytes(24).toString('base64url')}`;
    const until = now + TICKET_TTL_MS;
    this.expiry.set(ticket, until);
    return { ticket, expires_at: new Date(until).toISOString() };
  }

  /** True (once) for a ticket issued within TICKET_TTL_MS; it is spent either way. */
  take(ticket: string, now = Date.now()): boolean {
    const until = this.expiry.get(ticket);
    this.expiry.delete(ticket);
    return until !== undefined && until > now;
  }
}

const tickets = new WeakMap<DaemonContext, EventTickets>();
export function eventTickets(ctx: DaemonContext): EventTickets {
  let t = tickets.get(ctx);
  if (!t) {
    t = new EventTickets();
    tickets.set(ctx, t);
  }
  return t;
}

function reject(socket: Duplex, err: ApiError): void {
  const body = JSON.stringify(errorBody(err));
  const reason =
    { 400: 'Bad Request', 401: 'Unauthorized', 403: 'Forbidden', 404: 'Not Found' }[err.status] ?? 'Error';
  socket.end(
    `HTTP/1.1 ${err.status} ${reason}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}

/** The run an event belongs to (null: not a run's event, such as an evolution's); rollout → run ids are cached per connection. */
function runOf(
  ctx: DaemonContext,
  event: DaemonEvent,
  runByRollout: BoundedMap<string, string | null>,
): string | null | Promise<string | null> {
  const byRollout = (rolloutId: string | null) => {
    if (!rolloutId) return null;
    const known = runByRollout.get(rolloutId);
    if (known !== undefined) return known;
    return ctx.store.getRollout(rolloutId).then((r) => {
      if (r && !FINISHED_ROLLOUT.has(r.status)) runByRollout.set(rolloutId, r.run_id, RUN_OF_ROLLOUT_BYTES);
      return r?.run_id ?? null;
    });
  };
  switch (event.type) {
    case 'run':
      return event.run.id;
    case 'run_metrics':
      return event.metrics.run_id;
    case 'group':
      return event.group.run_id;
    case 'rollout':
      if (FINISHED_ROLLOUT.has(event.rollout.status)) runByRollout.delete(event.rollout.id);
      else runByRollout.set(event.rollout.id, event.rollout.run_id, RUN_OF_ROLLOUT_BYTES);
      return event.rollout.run_id;
    case 'llm_call':
      return byRollout(event.call.rollout_id);
    case 'reward':
      return byRollout(event.reward.rollout_id);
    case 'model_version':
      return event.run_id;
    case 'workers':
      return event.workers.run_id;
    case 'tool_runs':
      return byRollout(event.rollout_id);
    case 'evaluation':
      return event.evaluation.run_id;
    case 'evaluation_progress':
      return event.progress.run_id;
    default:
      return null;
  }
}

/** Each event is serialized once, however many sockets receive it. */
const serialized = new WeakMap<DaemonEvent, string>();
function serialize(event: DaemonEvent): string {
  let text = serialized.get(event);
  if (text === undefined) {
    // Run configs go out without node tokens.
    text = JSON.stringify(
      event.type === 'run'
        ? { ...event, run: { ...event.run, config: withoutSecrets(event.run.config) } }
        : event,
    );
    serialized.set(event, text);
  }
  return text;
}

/**
 * A run-filtered connection's rollout → run ids: RUN_OF_ROLLOUT_BYTES an entry (two ids and the Map's
 * slots), RUN_OF_ROLLOUT_BUDGET_BYTES a connection; past it the rollout seen longest ago goes (and is
 * read again if it calls); a rollout's entry goes when it finishes.
 */
const RUN_OF_ROLLOUT_BUDGET_BYTES = 4 * 1024 * 1024;
const RUN_OF_ROLLOUT_BYTES = 160;

function stream(ctx: DaemonContext, ws: WebSocket, runId: string | undefined): void {
  const runByRollout = new BoundedMap<string, string | null>(RUN_OF_ROLLOUT_BUDGET_BYTES);
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
  // ws loads with the first socket: a daemon nobody watches never holds it
  let wss: WebSocketServer | null = null;
  const sockets = async () => {
    const { WebSocketServer } = await import('ws');
    wss ??= new WebSocketServer({ noServer: true, maxPayload: 64 * 1024 });
    return wss;
  };
  const onUpgrade = (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    let url: URL;
    try {
      url = new URL(req.url ?? '/', 'http://localhost');
    } catch {
      // `//host:99999` as the request target: URL refuses it; an event handler must not throw.
      return reject(socket, new ApiError(400, 'invalid_url', 'the request URL does not parse', 'path'));
    }
    if (url.pathname !== EVENTS_PATH) {
      // Nobody else listens for upgrades on this path: answer rather than leave the socket hanging.
      if (server.listeners('upgrade').length === 1)
        reject(socket, new ApiError(404, 'not_found', `no WebSocket at ${url.pathname}`));
      return;
    }
    socket.on('error', () => socket.destroy());
    (async () => {
      if (url.searchParams.has('token'))
        throw new ApiError(
          400,
          'invalid_request',
          'the token is not accepted in the URL (proxies and logs keep URLs): send Authorization: Bearer <token>, or POST /api/events/ticket and connect with ?ticket=',
          'token',
        );
      const parsed = EventsQuery.safeParse(Object.fromEntries(url.searchParams));
      if (!parsed.success) throw validationError(parsed.error, 'query');
      const header = bearerToken(req.headers);
      const ticket = parsed.data.ticket;
      if (header !== null || ticket === undefined) await authorize(ctx, 'token', header, undefined);
      else if (!eventTickets(ctx).take(ticket))
        throw new ApiError(
          401,
          'unauthorized',
          `unknown, used or expired ticket: POST /api/events/ticket for a new one (each opens one socket within ${TICKET_TTL_MS / 1000} s)`,
          'ticket',
        );
      const runId = parsed.data.run_id;
      if (runId && !(await ctx.store.getRun(runId))) {
        throw new ApiError(404, 'not_found', `no run with id ${JSON.stringify(runId)}`, 'run_id');
      }
      (await sockets()).handleUpgrade(req, socket, head, (ws) => stream(ctx, ws, runId));
    })().catch((err) => reject(socket, toApiError(err, 0)));
  };
  server.on('upgrade', onUpgrade);
  return {
    close: async () => {
      server.off('upgrade', onUpgrade);
      if (!wss) return;
      const open = wss;
      for (const client of open.clients) client.terminate();
      await new Promise<void>((resolve) => open.close(() => resolve()));
    },
  };
}
