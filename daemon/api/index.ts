// Registers the REST API (/api/*) and the event socket on the daemon's fastify app.
// Everything under /api shares one error shape, JSON parsing and token check, in its own fastify scope
// so the proxy's routes keep their own.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { z } from 'zod';
import type { DaemonContext } from '../context';
import { authorize, bearerToken, refuseEndedRollout } from './auth';
import { apiJsonParser, keepConnectionFor413 } from './body';
import { ApiError, errorBody, toApiError, validationError } from './errors';
import { attachEvents } from './events';
import { type AnyRoute, type Caller, NO_CONTENT } from './route';
import { routes } from './routes';

export { apiJsonParser } from './body';
export { routes } from './routes';

function parse(schema: z.ZodType | undefined, value: unknown, where: string): unknown {
  if (!schema) return undefined;
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw validationError(parsed.error, where);
  return parsed.data;
}

/** Aborts when the client goes away before its answer is complete (the response closes unfinished). */
function hangUpSignal(req: FastifyRequest, reply: FastifyReply): AbortSignal {
  const hangUp = new AbortController();
  const res = reply.raw;
  if (req.raw.socket.destroyed) hangUp.abort();
  else
    res.once('close', () => {
      if (!res.writableFinished) hangUp.abort();
    });
  return hangUp.signal;
}

export async function registerApi(
  app: FastifyInstance,
  ctx: DaemonContext,
): Promise<{ close(): Promise<void> }> {
  const bodyLimit = ctx.config.body_limit_bytes;
  const callers = new WeakMap<FastifyRequest, Caller>();
  // One table serves /api: a route another module adds there by hand (with no schemas, so missing from
  // the OpenAPI document and the route fuzz test) is refused as the daemon starts.
  const tableRoutes = new Set(routes.map((r) => `${r.method} ${r.path}`));
  app.addHook('onRoute', (options) => {
    const methods = Array.isArray(options.method) ? options.method : [options.method];
    for (const method of methods)
      if (
        method !== 'HEAD' &&
        options.url.startsWith('/api/') &&
        !tableRoutes.has(`${method} ${options.url}`)
      )
        throw new Error(`${method} ${options.url} is not in the API route table (daemon/api/routes.ts)`);
  });

  await app.register(
    async (api) => {
      // Our own JSON parser: an empty body is "no body"; malformed JSON, `null` and bodies nested
      // deeper than MAX_JSON_DEPTH are 400s naming the body.
      api.removeContentTypeParser('application/json');
      api.addContentTypeParser('application/json', { parseAs: 'string' }, apiJsonParser);
      api.setErrorHandler(async (err, req, reply) => {
        const e = toApiError(err, bodyLimit);
        if (e.status >= 500) ctx.log('api error', { method: req.method, url: req.url, error: e.message });
        await keepConnectionFor413(e, req.raw, reply);
        return reply.code(e.status).send(errorBody(e));
      });
      api.setNotFoundHandler((req, reply) => {
        const e = new ApiError(404, 'not_found', `no route ${req.method} ${req.url.split('?')[0]}`);
        reply.code(404).send(errorBody(e));
      });

      for (const r of routes as AnyRoute[]) {
        api.route({
          method: r.method,
          url: r.path.replace(/^\/api/, ''),
          onRequest: async (req) => {
            const id = (req.params as { id?: unknown }).id;
            const caller = await authorize(
              ctx,
              r.auth,
              bearerToken(req.headers),
              typeof id === 'string' ? id : undefined,
            );
            if (caller.kind === 'rollout' && r.method !== 'GET')
              await refuseEndedRollout(ctx, caller.rolloutId);
            callers.set(req, caller);
          },
          handler: async (req, reply) => {
            const params = parse(r.params, req.params, 'path');
            const query = parse(r.query, req.query ?? {}, 'query');
            const body = parse(r.body, req.body ?? {}, 'body');
            const caller = callers.get(req);
            if (!caller)
              throw new ApiError(401, 'unauthorized', 'the request was not authorized', 'authorization');
            const signal = hangUpSignal(req, reply);
            const result = await r.handler({ params, query, body, ctx, caller, signal } as never);
            if (result === NO_CONTENT) {
              if (!r.noContent) throw new Error(`${r.method} ${r.path} answered 204 but does not declare it`);
              return reply.code(204).send();
            }
            reply.code(r.status ?? 200);
            return result;
          },
        });
      }
    },
    { prefix: '/api' },
  );

  return attachEvents(app.server, ctx);
}
