// The LLM proxy: OpenAI (chat/completions, completions, responses, models) and Anthropic (messages)
// wire APIs under `/r/<rolloutId>/v1/...` (rollout-scoped) and `/v1/...` (the active recording
// session). Every call goes to an inference backend (or a recording's upstream) and is recorded.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { parseJsonBody } from '../api/body';
import type { DaemonContext } from '../context';
import type { WireApi } from '../protocol/entities';
import {
  askServedModels,
  BackendPool,
  type Backends,
  readText,
  rootUrl,
  type ServedModels,
  send,
} from './backends';
import { BridgeMemory } from './bridge';
import { Call } from './call';
import { backendBody, type FixedTarget, servedBody } from './dispatch';
import { anthropicErrorBody, errorBody, invalidBody, openaiErrorBody, ProxyError, wireOfUrl } from './errors';
import { nativeOutput, type Output, translatedOutput } from './output';
import { passthrough } from './passthrough';
import { runCall } from './pipeline';
import { Recorder } from './recorder';
import { ChatBody, CompletionBody } from './requests';
import { keyOf, type Scope, Scopes, upstreamKey } from './scope';
import { countTokens, translators } from './translate';
import { geminiCountTokens, geminiTranslator } from './translate/gemini';
import type { ChatRequest } from './translate/types';

export interface ProxyHandle {
  backends: Backends;
  /** The pool itself (health, outstanding requests, served models) for status views. */
  pool: BackendPool;
}

export type { Backends } from './backends';

type Json = Record<string, any>;

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

export async function registerProxy(app: FastifyInstance, ctx: DaemonContext): Promise<ProxyHandle> {
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
  const rawBodies = new WeakMap<FastifyRequest, string>();
  const memory = new BridgeMemory();
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
  const scopeOf = (req: FastifyRequest): Promise<Scope> => {
    const rid = (req.params as { rid?: string }).rid;
    const key = keyOf(req.headers);
    return rid !== undefined ? scopes.forRollout(rid, key) : scopes.forUnscoped(key);
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
  const newCall = (req: FastifyRequest, reply: FastifyReply, wire: WireApi, t0: number) => {
    const raw = rawBodies.get(req);
    const parsed = req.body !== undefined || raw === undefined || raw.trim() === '';
    const call = new Call({
      ctx,
      recorder,
      pool,
      reply,
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

  const anthropicHeaders = async (req: FastifyRequest): Promise<Record<string, string>> => {
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
  const native = (kind: 'chat' | 'completions') => async (req: FastifyRequest, reply: FastifyReply) => {
    const t0 = performance.now();
    const call = newCall(req, reply, kind, t0);
    try {
      call.scope = await scopeOf(req);
    } catch (e) {
      return call.fail(asProxyError(e));
    }
    const body = req.body as Json;
    call.tags.push(...sideTags(call.scope, body));
    const parsed = (kind === 'chat' ? ChatBody : CompletionBody).safeParse(body);
    if (!parsed.success) return call.fail(invalidBody(parsed.error));
    let target: FixedTarget | null;
    try {
      target = await fixedTarget(call.scope);
    } catch (e) {
      return call.fail(asProxyError(e));
    }
    const stream = body.stream === true;
    await runCall(call, pool, {
      kind,
      body: backendBody(body, kind, target?.extras ?? true),
      stream,
      output: nativeOutput(body),
      target,
      tito: kind === 'chat' ? titoOf(call.scope, call.tags) : undefined,
    });
  };

  /** Responses, Messages and Gemini: translated to chat for the backends, or relayed to a native upstream. */
  const translated =
    (wire: 'responses' | 'messages' | 'gemini') => async (req: FastifyRequest, reply: FastifyReply) => {
      const t0 = performance.now();
      const call = newCall(req, reply, wire, t0);
      // Gemini errors in Google's shape from the start (the others' errorWire covers them).
      const early = wire === 'gemini' ? translatedOutput(geminiTranslator, null) : undefined;
      let body = req.body as Json;
      if (wire === 'gemini') {
        const found = geminiTarget(req);
        if (!found || found.method === 'countTokens')
          return call.fail(
            new ProxyError(404, `no Gemini method ${req.url.split('?')[0]}`, null, 'unknown_route'),
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
      try {
        target = await fixedTarget(scope);
      } catch (e) {
        return call.fail(asProxyError(e), {}, output);
      }
      await runCall(call, pool, {
        kind: 'chat',
        body: backendBody(chat as Json, 'chat', target?.extras ?? true),
        stream,
        output,
        target,
        tito: titoOf(scope, call.tags),
      });
    };

  /** Anthropic count_tokens: the upstream's own, or the backend's tokenizer over the translated chat. */
  const countTokensRoute =
    (wire: 'messages' | 'gemini') => async (req: FastifyRequest, reply: FastifyReply) => {
      const t0 = performance.now();
      const call = newCall(req, reply, wire, t0);
      const early = wire === 'gemini' ? translatedOutput(geminiTranslator, null) : undefined;
      const model = wire === 'gemini' ? (geminiTarget(req)?.model ?? '') : '';
      if (wire === 'gemini') geminiKey(req);
      try {
        call.scope = await scopeOf(req);
      } catch (e) {
        return call.fail(asProxyError(e), {}, early);
      }
      const scope = call.scope;
      call.tags.push(...sideTags(scope, req.body, true));
      const recordIt = scope.recording !== null;
      if (!recordIt) call.recorded = true; // count_tokens of run rollouts is not an LLM call worth a record
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
        call.settled = true;
        await call.record({ response: result, http_status: 200, total_ms: call.elapsed() });
        return reply.code(200).send(result);
      } catch (e) {
        if (e instanceof z.ZodError) return call.fail(invalidBody(e), {}, early);
        return call.fail(asProxyError(e), {}, early);
      }
    };

  const models = async (req: FastifyRequest, reply: FastifyReply) => {
    const anthropic = req.headers['anthropic-version'] !== undefined;
    const fail = (e: unknown) => {
      const err = asProxyError(e);
      return reply
        .code(err.status)
        .send(
          anthropic
            ? anthropicErrorBody(err.status, err.message)
            : openaiErrorBody(err.status, err.message, null, err.code),
        );
    };
    let upstream: Scope['upstream'] = null;
    const rid = (req.params as { rid?: string }).rid;
    const key = keyOf(req.headers);
    try {
      if (rid !== undefined || !scopes.isDaemonToken(key) || (await scopes.activeRecording())) {
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
        const res = await send(`${rootUrl(base)}/v1/models`, { method: 'GET', headers, timeoutMs: 30_000 });
        const text = await readText(res);
        return reply
          .code(res.statusCode ?? 502)
          .header('content-type', 'application/json')
          .send(text);
      }
      let names: string[];
      if (upstream?.kind === 'vllm' && upstream.base_url) {
        const res = await send(`${rootUrl(upstream.base_url)}/v1/models`, {
          method: 'GET',
          timeoutMs: 30_000,
        });
        const json = JSON.parse(await readText(res)) as { data?: { id: string }[] };
        names = (json.data ?? []).map((m) => m.id);
      } else names = await pool.models();
      if (anthropic)
        return reply.send({
          data: names.map((id) => ({
            type: 'model',
            id,
            display_name: id,
            created_at: '1970-01-01T00:00:00Z',
          })),
          has_more: false,
          first_id: names[0] ?? null,
          last_id: names.at(-1) ?? null,
        });
      return reply.send({
        object: 'list',
        data: names.map((id) => ({ id, object: 'model', created: 0, owned_by: 'harness-rl' })),
      });
    } catch (e) {
      return fail(e);
    }
  };

  const unknownRoute = async (req: FastifyRequest, reply: FastifyReply) => {
    const err = new ProxyError(
      404,
      `no proxy route ${req.method} ${req.url.split('?')[0]}`,
      null,
      'unknown_route',
    );
    return reply.code(404).send(errorBody(wireOfUrl(req.url), err));
  };

  await app.register(async (proxy) => {
    proxy.removeAllContentTypeParsers();
    proxy.addContentTypeParser('*', { parseAs: 'string', bodyLimit }, (req, text, done) => {
      const raw = String(text);
      rawBodies.set(req, raw);
      const parsed = parseJsonBody(raw);
      if ('value' in parsed) return done(null, parsed.value);
      const { code, message } = parsed.problem;
      done(
        new ProxyError(
          400,
          code === 'invalid_json'
            ? `invalid JSON body: ${message.replace(/^malformed JSON body: /, '')}`
            : message,
          null,
          code,
        ),
        undefined,
      );
    });
    proxy.setErrorHandler(async (err, req, reply) => {
      const e = asProxyError(err, bodyLimit);
      const wire = wireOfUrl(req.url);
      // A body the proxy could not read still leaves a failed call on a known rollout.
      try {
        if (req.method === 'POST') {
          const call = newCall(req, reply, wireApiOfUrl(req.url), performance.now());
          call.scope = await scopeOf(req);
          return call.fail(e);
        }
      } catch {
        // unknown rollout or wrong key: nothing to record
      }
      return reply.code(e.status).send(errorBody(wire, e));
    });
    for (const prefix of ['', '/r/:rid']) {
      const opts = { bodyLimit };
      proxy.post(`${prefix}/v1/chat/completions`, opts, native('chat'));
      proxy.post(`${prefix}/v1/completions`, opts, native('completions'));
      proxy.post(`${prefix}/v1/responses`, opts, translated('responses'));
      proxy.post(`${prefix}/v1/messages`, opts, translated('messages'));
      proxy.post(`${prefix}/v1/messages/count_tokens`, opts, countTokensRoute('messages'));
      proxy.post(`${prefix}/v1beta/models/*`, opts, (req, reply) =>
        geminiTarget(req)?.method === 'countTokens'
          ? countTokensRoute('gemini')(req, reply)
          : translated('gemini')(req, reply),
      );
      proxy.get(`${prefix}/v1/models`, models);
      proxy.all(`${prefix}/v1/*`, unknownRoute);
    }
  });
  app.addHook('onClose', async () => scopes.close());

  return { backends: pool, pool };
}

/** The first RAW_KEEP characters of an unparsable body, marked when cut. */
const RAW_KEEP = 10_000;
function truncate(raw: string): string {
  return raw.length <= RAW_KEEP
    ? raw
    : `${raw.slice(0, RAW_KEEP)}… (${raw.length - RAW_KEEP} more characters)`;
}

/** `…/v1beta/models/<model>:generateContent` or `:streamGenerateContent`: the model and whether to stream. */
function geminiTarget(
  req: FastifyRequest,
): { model: string; method: 'generateContent' | 'streamGenerateContent' | 'countTokens' } | null {
  const m = /\/v1beta\/models\/([^/?:]+):(generateContent|streamGenerateContent|countTokens)(?:\?|$)/.exec(
    req.url,
  );
  if (!m) return null;
  return { model: decodeURIComponent(m[1]), method: m[2] as 'generateContent' };
}

/** Google clients may send the key as `?key=` instead of x-goog-api-key: read it as that header. */
function geminiKey(req: FastifyRequest): void {
  const key = (req.query as { key?: unknown } | undefined)?.key;
  if (typeof key === 'string' && !keyOf(req.headers)) req.headers['x-goog-api-key'] = key;
}

function wireApiOfUrl(url: string): WireApi {
  if (url.includes('/v1beta/models/')) return 'gemini';
  if (url.includes('/v1/messages')) return 'messages';
  if (url.includes('/v1/responses')) return 'responses';
  if (url.includes('/v1/completions') && !url.includes('/chat/')) return 'completions';
  return 'chat';
}

function asProxyError(e: unknown, bodyLimit?: number): ProxyError {
  if (e instanceof ProxyError) return e;
  const fe = e as { code?: string; statusCode?: number; message?: string };
  if (fe?.code === 'FST_ERR_CTP_BODY_TOO_LARGE')
    return new ProxyError(
      413,
      `request body too large (limit ${bodyLimit ?? '?'} bytes)`,
      null,
      'body_too_large',
    );
  if (fe?.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE' || fe?.code === 'FST_ERR_CTP_EMPTY_JSON_BODY')
    return new ProxyError(400, fe.message ?? 'bad request body', null, 'invalid_body');
  if (typeof fe?.statusCode === 'number' && fe.statusCode >= 400 && fe.statusCode < 500)
    return new ProxyError(fe.statusCode, fe.message ?? 'bad request');
  return new ProxyError(500, `proxy error: ${e instanceof Error ? e.message : String(e)}`, null, 'internal');
}
