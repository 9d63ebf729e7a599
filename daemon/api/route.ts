// The shape of a REST route: path, auth, zod schemas of params, query, body and response, handler.
// routes.ts declares the table; index.ts serves it and openapi.ts documents it.
import type { z } from 'zod';
import type { DaemonContext } from '../context';

/** Who is calling: the daemon token (full access) or one rollout's key. */
export type Caller = { kind: 'daemon' } | { kind: 'rollout'; rolloutId: string };

/** none: open; token: the daemon token; rollout: the daemon token or the key of the rollout in :id. */
export type Auth = 'none' | 'token' | 'rollout';

type Out<S> = S extends z.ZodType ? z.output<S> : undefined;

export interface HandlerArgs<P, Q, B> {
  params: Out<P>;
  query: Out<Q>;
  body: Out<B>;
  ctx: DaemonContext;
  caller: Caller;
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
  /** Served as a WebSocket upgrade; a plain GET answers 426. */
  websocket?: boolean;
  handler(args: HandlerArgs<P, Q, B>): Promise<z.input<R>>;
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
