// The REST API as one table: each route declares its method, path, schemas and handler. The server
// validates requests with these schemas and the OpenAPI document is generated from the same table.
// The routes of each resource family live in their own module; this one holds the daemon's own.
import { z } from 'zod';
import { VERSION } from '../config/version';
import { EmptyBody, EventsQuery, EventsTicket, Health } from '../protocol/api';
import { ApiError } from './errors';
import { evaluationRoutes } from './evaluations';
import { eventTickets, TICKET_TTL_MS } from './events';
import { evolutionRoutes } from './evolutions';
import { importRoutes } from './imports';
import { inferenceRoutes } from './inference';
import { openApiFor } from './openapi';
import { recordingRoutes } from './recordings';
import { rolloutRoutes } from './rollouts';
import { type AnyRoute, route } from './route';
import { validationRoutes } from './run-validation';
import { runRoutes } from './runs';
import { workerRoutes } from './workers';

export const routes: AnyRoute[] = [
  route({
    method: 'GET',
    path: '/api/health',
    summary: 'liveness, version and store kind (no token needed)',
    auth: 'none',
    response: Health,
    handler: async ({ ctx }) => ({ ok: true as const, version: VERSION, store: ctx.store.kind }),
  }),
  route({
    method: 'GET',
    path: '/api/openapi.json',
    summary: 'this API as an OpenAPI 3.1 document',
    auth: 'token',
    response: z.record(z.string(), z.unknown()),
    handler: async ({ ctx }) => openApiFor(ctx, routes) as Record<string, unknown>,
  }),
  route({
    method: 'GET',
    path: '/api/events',
    summary:
      'WebSocket: every store event as one JSON DaemonEvent per message (token by header, or a ticket from POST /api/events/ticket as ?ticket=)',
    auth: 'token',
    websocket: true,
    query: EventsQuery,
    response: z.unknown(),
    handler: async () => {
      throw new ApiError(426, 'upgrade_required', 'GET /api/events is a WebSocket: send Upgrade: websocket');
    },
  }),

  route({
    method: 'POST',
    path: '/api/events/ticket',
    summary: `a single-use ticket that opens GET /api/events as ?ticket= within ${TICKET_TTL_MS / 1000} s, for browsers and webviews (which cannot send headers)`,
    auth: 'token',
    body: EmptyBody,
    response: EventsTicket,
    status: 201,
    handler: async ({ ctx }) => eventTickets(ctx).issue(),
  }),

  ...rolloutRoutes,
  ...runRoutes,
  ...validationRoutes,
  ...evaluationRoutes,
  ...evolutionRoutes,
  ...inferenceRoutes,
  ...recordingRoutes,
  ...importRoutes,
  ...workerRoutes,
];
