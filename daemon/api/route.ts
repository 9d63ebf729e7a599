// The shape of a REST route: path, auth, zod schemas of params, query, body and response, handler.
// routes.ts declares the table; index.ts serves it and openapi.ts documents it.
import type { z } from 'zod';
import type { DaemonContext } from '../context';

/** Who is calling: the daemon token (full access), one rollout's key, or one run's worker credential. */
export type Caller =
  | { kind: 'daemon' }
  | { kind: 'rollout'; rolloutId: string }
  | { kind: 'worker'; runId: string };

/**
 * none: open; token: the daemon token; rollout: the daemon token or the key of the rollout in :id;
 * worker: the daemon token or a run's worker credential (the handler keeps it to that run).
 */
export type Auth = 'none' | 'token' | 'rollout' | 'worker';

type Out<S> = S extends z.ZodType ? z.output<S> : undefined;

/** What a handler returns to answer 204 with no body (only routes that declare `noContent`). */
export const NO_CONTENT: unique symbol = Symbol('204 No Content');
export type NoContent = typeof NO_CONTENT;

export interface HandlerArgs<P, Q, B> {
  params: Out<P>;
  query: Out<Q>;
  body: Out<B>;
  ctx: DaemonContext;
  caller: Caller;
  /** Aborts when the client hangs up before the answer is sent (a long poll stops waiting for it). */
  signal: AbortSignal;
}

export interface RouteSpec<
  P extends z.ZodType | undefined,
  Q extends z.ZodType | undefined,
  B extends z.ZodType | undefined,
  R extends z.ZodType,
> {
  method: 'GET' | 'POST';
  /** Full path with fastify-style parameters, e.g. /api/rollouts/:id */
  path: string;
  summary: string;
  auth: Auth;
  params?: P;
  query?: Q;
  body?: B;
  response: R;
  /** Success status (default 200). */
  status?: number;
  /** When the handler may answer 204 with no body (it returns NO_CONTENT); documented as such. */
  noContent?: string;
  /** Error statuses beyond the common ones (400, 401, 403, 404, 409, 413), with what they mean. */
  errors?: Record<string, string>;
  /** Served as a WebSocket upgrade; a plain GET answers 426. */
  websocket?: boolean;
  handler(args: HandlerArgs<P, Q, B>): Promise<z.input<R> | NoContent>;
}

export type AnyRoute = RouteSpec<
  z.ZodType | undefined,
  z.ZodType | undefined,
  z.ZodType | undefined,
  z.ZodType
>;

export function route<
  P extends z.ZodType | undefined = undefined,
  Q extends z.ZodType | undefined = undefined,
  B extends z.ZodType | undefined = undefined,
  R extends z.ZodType = z.ZodType,
>(spec: RouteSpec<P, Q, B, R>): AnyRoute {
  return spec as unknown as AnyRoute;
}
