// The proxy's routes as one table: each path of PROXY_ROUTES (../route-table.ts) has its handler here,
// one module per wire family; a request that reaches no handler, or fails before its handler answers,
// is answered here.
import type { ServerResponse } from 'node:http';
import { errorBody, ProxyError, wireOfUrl } from '../errors';
import { type ProxyRequest, sendJson } from '../front';
import { GEMINI_PATH, isCountTokens, PROXY_ROUTES, type ProxyRoutePath, wireApiOfUrl } from '../route-table';
import { messagesCountTokensRoute, messagesRoute } from './anthropic';
import { asProxyError, type Handler, newCall, type ProxyDeps, scopeOf } from './deps';
import { geminiCountTokensRoute, generateRoute } from './gemini';
import { modelsRoute } from './models';
import { nativeRoute, responsesRoute } from './openai';

export type { Handler, ProxyDeps } from './deps';

/** One handler per route of PROXY_ROUTES (the type makes the two lists agree). */
function handlers(d: ProxyDeps): Record<ProxyRoutePath, Handler> {
  const generate = generateRoute(d);
  return {
    '/v1/chat/completions': nativeRoute(d, 'chat'),
    '/v1/completions': nativeRoute(d, 'completions'),
    '/v1/responses': responsesRoute(d),
    '/v1/messages': messagesRoute(d),
    '/v1/messages/count_tokens': messagesCountTokensRoute(d),
    '/v1/models': modelsRoute(d),
    '/v1beta/models/{model}:generateContent': generate,
    '/v1beta/models/{model}:streamGenerateContent': generate,
    '/v1beta/models/{model}:countTokens': geminiCountTokensRoute(d),
  };
}

const unknownRoute: Handler = async (req, res) => {
  const err = new ProxyError(404, `no proxy route ${req.method} ${req.path}`, null, 'unknown_route');
  return sendJson(res, 404, JSON.stringify(errorBody(wireOfUrl(req.url), err)));
};

/** The handler of a request under the proxy's paths; null leaves it to fastify (its 404). */
export function router(d: ProxyDeps): (req: ProxyRequest) => Handler | null {
  const all = handlers(d);
  const byRoute = new Map(PROXY_ROUTES.map((r) => [`${r.method} ${r.path}`, all[r.path]]));
  return (req) => {
    const method = req.method === 'HEAD' ? 'GET' : req.method;
    if (req.path.startsWith('/v1beta/models/')) {
      if (method !== 'POST') return null;
      // An unknown Gemini method still reaches its handler, which answers 404 in Google's shape.
      const gemini = GEMINI_PATH.exec(req.path)?.[2] ?? 'generateContent';
      return byRoute.get(`POST /v1beta/models/{model}:${gemini}`) ?? null;
    }
    return byRoute.get(`${method} ${req.path}`) ?? unknownRoute;
  };
}

/** A request that failed before its handler answered: a failed call on a known rollout, and the error. */
export async function failRequest(
  d: ProxyDeps,
  err: unknown,
  req: ProxyRequest,
  res: ServerResponse,
): Promise<void> {
  const e = asProxyError(err);
  if (res.headersSent) {
    d.ctx.log('proxy: a handler failed after answering', { error: e.message });
    if (!res.writableEnded) res.destroy();
    return;
  }
  try {
    // A URL that names no rollout (a malformed escape in its id) has no call to record.
    if (req.method === 'POST' && !req.problem) {
      const call = newCall(d, req, res, wireApiOfUrl(req.path), performance.now());
      call.scope = await scopeOf(d, req);
      // count_tokens has one rule whatever the outcome: recorded in a recording, never in a rollout.
      if (isCountTokens(req.path) && !call.scope.recording) call.unrecorded();
      await call.fail(e);
      return;
    }
  } catch {
    // unknown rollout or wrong key: nothing to record
  }
  if (!res.headersSent) sendJson(res, e.status, JSON.stringify(errorBody(wireOfUrl(req.path), e)));
}
