// The LLM proxy: OpenAI (chat/completions, completions, responses, models) and Anthropic (messages)
// wire APIs under `/r/<rolloutId>/v1/...` (rollout-scoped) and `/v1/...` (the active recording
// session). Every call goes to an inference backend (or a recording's upstream) and is recorded.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { parseJsonBody } from '../api/body';
import type { DaemonContext } from '../context';
import { readText, rootUrl, send } from '../http';
import { attemptOver, FINISHED_ROLLOUT, type WireApi } from '../protocol/entities';
import { askServedModels, BackendPool, type Backends, type ServedModels } from './backends';
import { BridgeMemory } from './bridge';
import { Call } from './call';
import { backendBody, backendText, type FixedTarget, servedBody } from './dispatch';
import { anthropicErrorBody, errorBody, invalidBody, openaiErrorBody, ProxyError, wireOfUrl } from './errors';
import { installFront, JSON_TYPE, type ProxyRequest, proxyRequest, readBody, sendJson } from './front';
import type { Json } from './json';
import { nativeOutput, type Output, translatedOutput } from './output';
import { passthrough } from './passthrough';
import { runCall } from './pipeline';
import { Recorder } from './recorder';
import { ChatBody, CompletionBody, surelyChatBody } from './requests';
import {
  GEMINI_PATH,
  geminiTarget,
  isCountTokens,
  PROXY_ROUTES,
  type ProxyRoutePath,
  wireApiOfUrl,
} from './route-table';
import { sampledBody } from './sampling';
import { keyOf, type Scope, Scopes, upstreamKey } from './scope';
import { countTokens, translators } from './translate';
import { geminiCountTokens, geminiTranslator } from './translate/gemini';
import type { ChatRequest } from './translate/types';

export interface ProxyHandle {
  backends: Backends;
  /** The pool itself (health, outstanding requests, served models) for status views. */
  pool: BackendPool;
  /** What the per-rollout caches hold now (each within its byte budget). */
  held(): {
    bridge: { bytes: number; rollouts: number };
    scopes: { bytes: number; rollouts: number };
    affinities: number;
  };
  /** LLM-call records waiting for their store transaction. */
  recorderDepth(): number;
}

export interface ProxyOptions {
  /** The token bridge's memory budget (BRIDGE_BUDGET_BYTES by default). */
  bridgeBudgetBytes?: number;
}

export type { Backends } from './backends';

/** The native request schemas (OpenAI's checks; unknown keys pass through). */
export { ChatBody, CompletionBody } from './requests';

// Claude's Haiku, OpenAI's mini and nano, Gemini's flash-lite (Gemini CLI's model router)
const DEFAULT_SIDE_MODELS = '(^|[-_./])(haiku|mini|nano|lite)([-_./]|$)';
const TITLE_HINT = /\btitle\b|summari[sz]e this (coding )?conversation/i;

function systemText(body: Json): string {
  let s = '';
  const add = (v: unknown) => {
    if (typeof v === 'string') s += `${v}\n`;
    else if (Array.isArray(v)) for (const p of v) if (p && typeof p.text === 'string') s += `${p.text}\n`;
  };
  add(body.system);
  add(body.instructions);
  if (Array.isArray(body.messages))
    for (const m of body.messages) if (m?.role === 'system' || m?.role === 'developer') add(m.content);
  return s.slice(0, 4000);
}

export async function registerProxy(
  app: FastifyInstance,
  ctx: DaemonContext,
  options: ProxyOptions = {},
): Promise<ProxyHandle> {
  const pool = new BackendPool(ctx.config.backend_timeout_ms);
  for (const url of ctx.config.backends) pool.add(url);
  const scopes = new Scopes(ctx);
  const bodyLimit = ctx.config.body_limit_bytes;
  let sideModels = new RegExp(DEFAULT_SIDE_MODELS, 'i');
  try {
    if (ctx.config.side_models) sideModels = new RegExp(ctx.config.side_models, 'i');
  } catch (e) {
    ctx.log('proxy: side_models is not a valid regular expression; using the default', { error: String(e) });
  }
  const memory = new BridgeMemory(options.bridgeBudgetBytes);
  // What the bridge and the pool keep for a rollout goes when its attempt is over (a recording's, when it stops).
  const forgetEnded = ctx.store.subscribe(
    (ev) => {
      if (ev.type === 'rollout' && attemptOver(ev.rollout)) {
        memory.forget(ev.rollout.id);
        if (FINISHED_ROLLOUT.has(ev.rollout.status)) pool.forgetRollout(ev.rollout.id);
      } else if (ev.type === 'recording' && ev.recording.status === 'stopped')
        memory.forget(ev.recording.rollout_id);
    },
    ['rollout', 'recording'],
  );
  const recorder = new Recorder(ctx.store);
  /**
   * The token-in-token-out bridge wherever the backend returns token ids: rollouts of runs with
   * `algorithm.tito` (the default), standalone rollouts unless created with `tito: false`, recordings on
   * a vLLM or reference upstream. Not for provider pass-through (text only) or side calls, which are no
   * turns of the trajectory (bridging them would also replace what the next main call extends).
   */
  const titoOf = (scope: Scope, tags: readonly string[]) => {
    if (tags.includes('side')) return undefined;
    if (scope.upstream && scope.upstream.kind !== 'vllm') return undefined;
    const on = scope.runConfig ? scope.runConfig.algorithm?.tito !== false : scope.rollout.tito !== false;
    return on ? memory : undefined;
  };

  /** The scope of a request from its path and key (throws ProxyError 401/403/404/409). */
  const scopeOf = (req: ProxyRequest): Promise<Scope> => {
    const key = keyOf(req.headers);
    return req.rid !== undefined ? scopes.forRollout(req.rid, key) : scopes.forUnscoped(key);
  };

  const sideTags = (scope: Scope, body: unknown, countTokensCall = false): string[] => {
    if (!scope.recording) return [];
    if (countTokensCall) return ['side'];
    const b = (body && typeof body === 'object' ? body : {}) as Json;
    if (typeof b.model === 'string' && sideModels.test(b.model)) return ['side'];
    if (TITLE_HINT.test(systemText(b))) return ['side'];
    return [];
  };

  /**
   * A call of `req`. A body that could not be parsed (malformed, nested too deep) is recorded as its
   * raw text, truncated, so nothing ever walks it.
   */
  const newCall = (req: ProxyRequest, res: ServerResponse, wire: WireApi, t0: number) => {
    const raw = req.raw;
    const parsed = req.body !== undefined || raw === undefined || raw.trim() === '';
    const call = new Call({
      ctx,
      recorder,
      res,
      wire,
      errorWire: wire === 'messages' ? 'anthropic' : 'openai',
      scope: null,
      request: parsed ? (req.body ?? null) : truncate(raw),
      raw: parsed ? raw : undefined,
      t0,
      tags: [],
    });
    // A call that asked to stream is recorded as streamed, even when it fails before the backend.
    call.stream = (req.body as { stream?: unknown } | null | undefined)?.stream === true;
    return call;
  };

  /**
   * The names each recording's vLLM upstream serves and its context length (the bridge's default
   * max_tokens), asked at most once a minute while it answers.
   */
  const upstreamModels = new Map<string, { at: number; served: Promise<ServedModels | null> }>();
  const servedModels = (root: string): Promise<ServedModels | null> => {
    const known = upstreamModels.get(root);
    if (known && Date.now() - known.at < 60_000) return known.served;
    const served = askServedModels(root, 10_000).then((s) => (s?.maxModelLen === undefined ? null : s));
    upstreamModels.set(root, { at: Date.now(), served });
    // not known (down, not vLLM-shaped): asked again by the next call
    served.then(
      (n) => n === null && upstreamModels.get(root)?.served === served && upstreamModels.delete(root),
    );
    return served;
  };

  /** Secrets-backed target for a recording's OpenAI / vLLM upstream (chat and completions). */
  const fixedTarget = async (scope: Scope): Promise<FixedTarget | null> => {
    const u = scope.upstream;
    if (!u) return null;
    if (u.kind === 'vllm') {
      if (!u.base_url) throw new ProxyError(400, 'the recording upstream "vllm" has no base_url');
      const root = rootUrl(u.base_url);
      const models = await servedModels(root);
      return {
        root,
        name: u.base_url,
        headers: {},
        extras: true,
        served: models?.names ?? null,
        maxModelLen: models?.maxModelLen ?? null,
      };
    }
    if (u.kind === 'openai') {
      const key = upstreamKey(ctx.dataDir, 'openai');
      if (!key)
        throw new ProxyError(401, `no OpenAI key: put {"openai": "sk-..."} in ${ctx.dataDir}/secrets.json`);
      const base = u.base_url ?? 'https://api.openai.com/v1';
      return { root: rootUrl(base), name: base, headers: { authorization: `Bearer ${key}` }, extras: false };
    }
    throw new ProxyError(
      400,
      'this recording forwards to Anthropic: point the client at the Anthropic base URL (…/v1/messages)',
    );
  };

  const anthropicHeaders = async (req: ProxyRequest): Promise<Record<string, string>> => {
    const key = upstreamKey(ctx.dataDir, 'anthropic');
    if (!key)
      throw new ProxyError(
        401,
        `no Anthropic key: put {"anthropic": "sk-ant-..."} in ${ctx.dataDir}/secrets.json`,
      );
    const h: Record<string, string> = {
      'x-api-key': key,
      'anthropic-version': String(req.headers['anthropic-version'] ?? '2023-06-01'),
    };
    if (typeof req.headers['anthropic-beta'] === 'string')
      h['anthropic-beta'] = req.headers['anthropic-beta'];
    return h;
  };

  /** Chat Completions and Completions, native. */
  const native = (kind: 'chat' | 'completions') => async (req: ProxyRequest, res: ServerResponse) => {
    const t0 = performance.now();
    const call = newCall(req, res, kind, t0);
    try {
      call.scope = await scopeOf(req);
    } catch (e) {
      return call.fail(asProxyError(e));
    }
    const body = req.body as Json;
    call.tags.push(...sideTags(call.scope, body));
    if (kind !== 'chat' || !surelyChatBody(body)) {
      const parsed = (kind === 'chat' ? ChatBody : CompletionBody).safeParse(body);
      if (!parsed.success) return call.fail(invalidBody(parsed.error));
    }
    let target: FixedTarget | null;
    try {
      target = await fixedTarget(call.scope);
    } catch (e) {
      return call.fail(asProxyError(e));
    }
    const stream = body.stream === true;
    let sent: ReturnType<typeof sampledBody>;
    try {
      sent = sampledBody(call.scope, backendBody(body, kind, target?.extras ?? true));
    } catch (e) {
      return call.fail(asProxyError(e));
    }
    await runCall(call, pool, {
      kind,
      body: sent.body,
      bodyText: backendText(req.raw, body, sent.body),
      sampling: sent.plan,
      stream,
      output: nativeOutput(body),
      target,
      tito: kind === 'chat' ? titoOf(call.scope, call.tags) : undefined,
    });
  };

  /** Responses, Messages and Gemini: translated to chat for the backends, or relayed to a native upstream. */
  const translated =
    (wire: 'responses' | 'messages' | 'gemini') => async (req: ProxyRequest, res: ServerResponse) => {
      const t0 = performance.now();
      const call = newCall(req, res, wire, t0);
      // Gemini errors in Google's shape from the start (the others' errorWire covers them).
      const early = wire === 'gemini' ? translatedOutput(geminiTranslator, null) : undefined;
      let body = req.body as Json;
      if (wire === 'gemini') {
        let found: ReturnType<typeof geminiTarget>;
        try {
          found = geminiTarget(req);
        } catch (e) {
          return call.fail(asProxyError(e), {}, early);
        }
        if (!found || found.method === 'countTokens')
          return call.fail(
            new ProxyError(404, `no Gemini method ${req.path}`, null, 'unknown_route'),
            {},
            early,
          );
        const target = { model: found.model, stream: found.method === 'streamGenerateContent' };
        call.stream = target.stream;
        geminiKey(req);
        body = body && typeof body === 'object' && !Array.isArray(body) ? { ...body, ...target } : body;
      }
      try {
        call.scope = await scopeOf(req);
      } catch (e) {
        return call.fail(asProxyError(e), {}, early);
      }
      const scope = call.scope;
      call.tags.push(...sideTags(scope, body));
      const u = scope.upstream;
      try {
        if (wire === 'messages' && u?.kind === 'anthropic') {
          if (!body || typeof body !== 'object')
            throw new ProxyError(400, 'the request body must be a JSON object');
          return passthrough(call, {
            url: `${rootUrl(u.base_url ?? 'https://api.anthropic.com')}/v1/messages`,
            headers: await anthropicHeaders(req),
            body,
            stream: body.stream === true,
            shape: 'messages',
            backendName: u.base_url ?? 'anthropic',
            record: true,
          });
        }
        if (wire === 'responses' && u?.kind === 'openai') {
          if (!body || typeof body !== 'object')
            throw new ProxyError(400, 'the request body must be a JSON object');
          const target = await fixedTarget(scope);
          return passthrough(call, {
            url: `${target?.root}/v1/responses`,
            headers: target?.headers ?? {},
            body,
            stream: body.stream === true,
            shape: 'responses',
            backendName: target?.name ?? 'openai',
            record: true,
          });
        }
        if (wire === 'responses' && u?.kind === 'anthropic')
          throw new ProxyError(
            400,
            'this recording forwards to Anthropic: use the Anthropic Messages API (…/v1/messages)',
          );
        if (wire === 'gemini' && u && u.kind !== 'vllm')
          throw new ProxyError(
            400,
            `this recording forwards to ${u.kind}: the Gemini API is translated for vLLM backends only`,
          );
      } catch (e) {
        return call.fail(asProxyError(e), {}, early);
      }
      const t = translators[wire];
      if (!t) return call.fail(new ProxyError(501, `the ${wire} API is not available yet`), {}, early);
      let parsedReq: unknown;
      let chat: ChatRequest;
      let stream: boolean;
      let output: Output;
      try {
        parsedReq = t.parse(body);
        stream = t.isStream(parsedReq);
        chat = t.toChat(parsedReq);
        output = translatedOutput(t, parsedReq);
      } catch (e) {
        if (e instanceof z.ZodError) return call.fail(invalidBody(e), {}, early);
        return call.fail(new ProxyError(400, e instanceof Error ? e.message : String(e)), {}, early);
      }
      // Hosted tools (web_search …) the backend cannot run: left out and noted, or refused by the run.
      const leftOut = t.leftOut?.(parsedReq) ?? [];
      if (leftOut.length > 0 && scope.runConfig?.inference?.unsupported_tools === 'reject')
        return call.fail(
          new ProxyError(
            400,
            `${leftOut.map((l) => `${l.path} (${l.tool}) is a ${l.reason}`).join('; ')} (this run sets inference.unsupported_tools: reject)`,
            leftOut[0].path,
            'unsupported_tool',
          ),
          {},
          output,
        );
      for (const l of leftOut) call.tags.push(`tool-left-out:${l.tool} (${l.reason})`);
      let target: FixedTarget | null;
      let sent: ReturnType<typeof sampledBody>;
      try {
        target = await fixedTarget(scope);
        sent = sampledBody(scope, backendBody(chat as Json, 'chat', target?.extras ?? true));
      } catch (e) {
        return call.fail(asProxyError(e), {}, output);
      }
      await runCall(call, pool, {
        kind: 'chat',
        body: sent.body,
        sampling: sent.plan,
        stream,
        output,
        target,
        tito: titoOf(scope, call.tags),
      });
    };

  /** Anthropic count_tokens: the upstream's own, or the backend's tokenizer over the translated chat. */
  const countTokensRoute =
    (wire: 'messages' | 'gemini') => async (req: ProxyRequest, res: ServerResponse) => {
      const t0 = performance.now();
      const call = newCall(req, res, wire, t0);
      const early = wire === 'gemini' ? translatedOutput(geminiTranslator, null) : undefined;
      let model = '';
      try {
        if (wire === 'gemini') model = geminiTarget(req)?.model ?? '';
        if (wire === 'gemini') geminiKey(req);
        call.scope = await scopeOf(req);
      } catch (e) {
        return call.fail(asProxyError(e), {}, early);
      }
      const scope = call.scope;
      call.tags.push(...sideTags(scope, req.body, true));
      const recordIt = scope.recording !== null;
      // count_tokens of a rollout is no LLM call of its trajectory: not recorded (failRequest keeps the
      // same rule for bodies that do not parse); in a recording it is a side call, recorded.
      if (!recordIt) call.unrecorded();
      const u = scope.upstream;
      try {
        if (u?.kind === 'anthropic' && wire === 'messages') {
          return passthrough(call, {
            url: `${rootUrl(u.base_url ?? 'https://api.anthropic.com')}/v1/messages/count_tokens`,
            headers: await anthropicHeaders(req),
            body: req.body as Json,
            stream: false,
            shape: 'json',
            backendName: u.base_url ?? 'anthropic',
            record: recordIt,
          });
        }
        const target = await fixedTarget(scope);
        const tokenize = async (chat: ChatRequest) => {
          const b = target ? null : pool.pick(scope.rolloutId, undefined, scope.rollout.run_id);
          const root = target?.root ?? b?.root;
          if (!root) throw new ProxyError(503, 'no healthy inference backend to count tokens with');
          const res = await send(`${root}/tokenize`, {
            body: JSON.stringify(
              target
                ? servedBody({ model: chat.model, messages: chat.messages, tools: chat.tools }, target.served)
                : { model: chat.model, messages: chat.messages, tools: chat.tools },
            ),
            headers: target?.headers,
            timeoutMs: ctx.config.backend_timeout_ms,
            idempotent: true, // counting tokens changes nothing
          });
          const text = await readText(res);
          if (res.statusCode !== 200) throw new ProxyError(502, `tokenize failed: ${text.slice(0, 300)}`);
          const count = (JSON.parse(text) as { count?: unknown }).count;
          if (typeof count !== 'number') throw new ProxyError(502, 'tokenize returned no count');
          return count;
        };
        const result =
          wire === 'gemini'
            ? await geminiCountTokens(model, req.body, tokenize)
            : await countTokens(req.body, tokenize);
        await call.answer(200, JSON_TYPE, JSON.stringify(result), {
          response: result,
          http_status: 200,
          total_ms: call.elapsed(),
        });
        return;
      } catch (e) {
        if (e instanceof z.ZodError) return call.fail(invalidBody(e), {}, early);
        return call.fail(asProxyError(e), {}, early);
      }
    };

  const models = async (req: ProxyRequest, res: ServerResponse) => {
    const anthropic = req.headers['anthropic-version'] !== undefined;
    const fail = (e: unknown) => {
      const err = asProxyError(e);
      return sendJson(
        res,
        err.status,
        JSON.stringify(
          anthropic
            ? anthropicErrorBody(err.status, err.message)
            : openaiErrorBody(err.status, err.message, null, err.code),
        ),
      );
    };
    let upstream: Scope['upstream'] = null;
    const key = keyOf(req.headers);
    try {
      if (req.rid !== undefined || !scopes.isDaemonToken(key) || (await scopes.activeRecording())) {
        upstream = (await scopeOf(req)).upstream;
      }
      if (upstream && upstream.kind !== 'vllm') {
        const headers =
          upstream.kind === 'anthropic'
            ? await anthropicHeaders(req)
            : ((await fixedTarget({ upstream } as Scope))?.headers ?? {});
        const base =
          upstream.base_url ??
          (upstream.kind === 'anthropic' ? 'https://api.anthropic.com' : 'https://api.openai.com/v1');
        const answer = await send(`${rootUrl(base)}/v1/models`, {
          method: 'GET',
          headers,
          timeoutMs: 30_000,
        });
        const text = await readText(answer);
        return sendJson(res, answer.statusCode ?? 502, text);
      }
      let names: string[];
      if (upstream?.kind === 'vllm' && upstream.base_url) {
        const answer = await send(`${rootUrl(upstream.base_url)}/v1/models`, {
          method: 'GET',
          timeoutMs: 30_000,
        });
        const json = JSON.parse(await readText(answer)) as { data?: { id: string }[] };
        names = (json.data ?? []).map((m) => m.id);
      } else names = await pool.models();
      if (anthropic)
        return sendJson(
          res,
          200,
          JSON.stringify({
            data: names.map((id) => ({
              type: 'model',
              id,
              display_name: id,
              created_at: '1970-01-01T00:00:00Z',
            })),
            has_more: false,
            first_id: names[0] ?? null,
            last_id: names.at(-1) ?? null,
          }),
        );
      return sendJson(
        res,
        200,
        JSON.stringify({
          object: 'list',
          data: names.map((id) => ({ id, object: 'model', created: 0, owned_by: 'harness-rl' })),
        }),
      );
    } catch (e) {
      return fail(e);
    }
  };

  const unknownRoute = async (req: ProxyRequest, res: ServerResponse) => {
    const err = new ProxyError(404, `no proxy route ${req.method} ${req.path}`, null, 'unknown_route');
    return sendJson(res, 404, JSON.stringify(errorBody(wireOfUrl(req.url), err)));
  };

  type Handler = (req: ProxyRequest, res: ServerResponse) => Promise<unknown>;
  const geminiGenerate = translated('gemini');
  // One handler per route of PROXY_ROUTES (the type makes the two lists agree).
  const handlers: Record<ProxyRoutePath, Handler> = {
    '/v1/chat/completions': native('chat'),
    '/v1/completions': native('completions'),
    '/v1/responses': translated('responses'),
    '/v1/messages': translated('messages'),
    '/v1/messages/count_tokens': countTokensRoute('messages'),
    '/v1/models': models,
    '/v1beta/models/{model}:generateContent': geminiGenerate,
    '/v1beta/models/{model}:streamGenerateContent': geminiGenerate,
    '/v1beta/models/{model}:countTokens': countTokensRoute('gemini'),
  };
  const byRoute = new Map(PROXY_ROUTES.map((r) => [`${r.method} ${r.path}`, handlers[r.path]]));
  /** The handler of a request under the proxy's paths; null leaves it to fastify (its 404). */
  const routeOf = (req: ProxyRequest): Handler | null => {
    const method = req.method === 'HEAD' ? 'GET' : req.method;
    if (req.path.startsWith('/v1beta/models/')) {
      if (method !== 'POST') return null;
      // An unknown Gemini method still reaches its handler, which answers 404 in Google's shape.
      const gemini = GEMINI_PATH.exec(req.path)?.[2] ?? 'generateContent';
      return byRoute.get(`POST /v1beta/models/{model}:${gemini}`) ?? null;
    }
    return byRoute.get(`${method} ${req.path}`) ?? unknownRoute;
  };

  /** A request that failed before its handler answered: a failed call on a known rollout, and the error. */
  const failRequest = async (err: unknown, req: ProxyRequest, res: ServerResponse) => {
    const e = asProxyError(err);
    if (res.headersSent) {
      ctx.log('proxy: a handler failed after answering', { error: e.message });
      if (!res.writableEnded) res.destroy();
      return;
    }
    try {
      // A URL that names no rollout (a malformed escape in its id) has no call to record.
      if (req.method === 'POST' && !req.problem) {
        const call = newCall(req, res, wireApiOfUrl(req.path), performance.now());
        call.scope = await scopeOf(req);
        // count_tokens has one rule whatever the outcome: recorded in a recording, never in a rollout.
        if (isCountTokens(req.path) && !call.scope.recording) call.unrecorded();
        return await call.fail(e);
      }
    } catch {
      // unknown rollout or wrong key: nothing to record
    }
    if (!res.headersSent) sendJson(res, e.status, JSON.stringify(errorBody(wireOfUrl(req.path), e)));
  };

  let closing = false;
  const serve = async (req: ProxyRequest, msg: IncomingMessage, res: ServerResponse, handler: Handler) => {
    if (closing) throw new ProxyError(503, 'the daemon is shutting down', null, 'closing');
    if (req.method === 'POST') {
      req.raw = await readBody(msg, res, bodyLimit);
      const parsed = parseJsonBody(req.raw);
      if ('problem' in parsed) {
        const { code, message } = parsed.problem;
        throw new ProxyError(
          400,
          code === 'invalid_json'
            ? `invalid JSON body: ${message.replace(/^malformed JSON body: /, '')}`
            : message,
          null,
          code,
        );
      }
      req.body = parsed.value;
    }
    if (req.problem) throw req.problem;
    await handler(req, res);
  };
  installFront(app.server, (msg, res) => {
    const req = proxyRequest(msg);
    const handler = req && routeOf(req);
    if (!req || !handler) return false;
    serve(req, msg, res, handler).catch((err) => failRequest(err, req, res));
    return true;
  });
  app.addHook('preClose', async () => {
    closing = true;
  });
  app.addHook('onClose', async () => {
    scopes.close();
    forgetEnded();
  });

  return {
    backends: pool,
    pool,
    held: () => ({ bridge: memory.held, scopes: scopes.held, affinities: pool.affinities }),
    recorderDepth: () => recorder.depth,
  };
}

/** The first RAW_KEEP characters of an unparsable body, marked when cut. */
const RAW_KEEP = 10_000;
function truncate(raw: string): string {
  return raw.length <= RAW_KEEP
    ? raw
    : `${raw.slice(0, RAW_KEEP)}… (${raw.length - RAW_KEEP} more characters)`;
}

/** Google clients may send the key as `?key=` instead of x-goog-api-key: read it as that header. */
function geminiKey(req: ProxyRequest): void {
  const key = new URLSearchParams(req.search).get('key');
  if (key !== null && !keyOf(req.headers)) req.headers['x-goog-api-key'] = key;
}

function asProxyError(e: unknown): ProxyError {
  if (e instanceof ProxyError) return e;
  return new ProxyError(500, `proxy error: ${e instanceof Error ? e.message : String(e)}`, null, 'internal');
}
