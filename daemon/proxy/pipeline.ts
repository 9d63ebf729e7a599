// One proxied LLM call: pick a backend, send the (chat or completions) request with token ids and
// logprobs turned on, hand the answer back in the harness's wire format (streaming through), and
// record it — always before the final byte reaches the harness, failures and cancellations included.
import type { FastifyReply } from 'fastify';
import { parseBoundedJson } from '../api/body';
import type { DaemonContext } from '../context';
import type { BridgeRecord, NewLlmCall, WireApi } from '../protocol/entities';
import { JsonText, plainValue } from '../store/json-text';
import {
  askedOf,
  type BackendKind,
  choiceIndexes,
  needsStrip,
  StreamAssembler,
  strip,
  stripText,
  type Tokens,
  tokensOf,
} from './assemble';
import {
  type Backend,
  type BackendPool,
  type BackendResponse,
  readText,
  SendError,
  send,
  timedOut,
} from './backends';
import type { BridgeDecision, BridgeMemory } from './bridge';
import { type ErrorWire, errorBody, openaiErrorBody, ProxyError } from './errors';
import type { Recorder } from './recorder';
import { hasSecret, redact } from './redact';
import type { Scope } from './scope';
import { SseParser } from './sse';
import { CompletionToChatStream, completionToChat } from './tito';
import type { WireTranslator } from './translate/types';

type Json = Record<string, any>;

/** What the harness receives, in its wire format. */
export interface Output {
  /** The harness sees vLLM's logprob entries (the stream assembler must keep them whole). */
  logprobEntries: boolean;
  finish(json: Json): unknown;
  open(): StreamOut;
  error(status: number, message: string, param?: string | null, code?: string | null): unknown;
}

export interface StreamOut {
  chunk(obj: Json, raw: string): string;
  end(): string;
  error(message: string): string;
  /** The whole answer as recorded; `json` (= asm.result(), may be changed in place) saves re-assembly. */
  assembled(asm: StreamAssembler, json?: Json): unknown;
}

/** Chat Completions / Completions as the harness asked: vLLM's extras stay only if it asked for them. */
export function nativeOutput(body: Json): Output {
  const asked = askedOf(body);
  return {
    logprobEntries: asked.logprobs,
    finish: (json) => (needsStrip(json, asked) ? strip(json, asked) : json),
    error: (status, message, param = null, code = null) => openaiErrorBody(status, message, param, code),
    open: () => ({
      chunk: (obj, raw) => `data: ${needsStrip(obj, asked) ? stripText(raw, asked) : raw}\n\n`,
      end: () => 'data: [DONE]\n\n',
      error: (message) => `data: ${JSON.stringify(openaiErrorBody(502, message))}\n\n`,
      assembled: (asm, json) => strip(json ?? asm.result(), asked),
    }),
  };
}

/** Responses / Messages through a wire translator (chat on the backend side). */
export function translatedOutput<Req>(t: WireTranslator<Req>, req: Req): Output {
  return {
    logprobEntries: false,
    finish: (json) => t.fromChat(json as never, req),
    error: (status, message, param = null) => t.errorBody(status, message, param),
    open: () => {
      const ws = t.stream(req);
      return {
        chunk: (obj) => ws.chunk(obj as never).join(''),
        end: () => ws.end().join(''),
        error: (message) => ws.error(message).join(''),
        assembled: () => ws.assembled(),
      };
    },
  };
}

/** A fixed target instead of the pool: a recording's upstream (vLLM or OpenAI). */
export interface FixedTarget {
  root: string;
  name: string;
  headers: Record<string, string>;
  /** Add return_token_ids/logprobs (vLLM understands them; OpenAI does not). */
  extras: boolean;
  /**
   * The names a vLLM upstream serves (its /v1/models), when known: a model name it does not serve (an
   * agent's built-in side-call or router model) is sent as the first of them, as the pool does.
   */
  served?: string[] | null;
  /** A vLLM upstream's max_model_len, when known (the bridge's default max_tokens). */
  maxModelLen?: number | null;
}

/**
 * `body` with its model name one the backend serves: unchanged when it serves it (or `served` is not
 * known); else `preferred` (a run's model) when served, else the first served name (the base model).
 */
export function servedBody(
  body: Json,
  served: readonly string[] | null | undefined,
  preferred?: string | null,
): Json {
  if (!served?.length || typeof body.model !== 'string' || served.includes(body.model)) return body;
  return { ...body, model: preferred && served.includes(preferred) ? preferred : served[0] };
}

export interface CallInit {
  ctx: DaemonContext;
  recorder: Recorder;
  pool: BackendPool;
  reply: FastifyReply;
  wire: WireApi;
  errorWire: ErrorWire;
  scope: Scope | null;
  /** The request as the harness sent it, and its JSON text when known (for cheap redaction). */
  request: unknown;
  raw?: string;
  t0: number;
  tags: string[];
}

/** The per-call state shared by the pipeline, the native pass-through and the error paths. */
export class Call {
  readonly ctx: DaemonContext;
  readonly recorder: Recorder;
  readonly reply: FastifyReply;
  readonly wire: WireApi;
  readonly errorWire: ErrorWire;
  scope: Scope | null;
  readonly t0: number;
  readonly tags: string[];
  stream = false;
  settled = false;
  recorded = false;
  private abortFn: (() => void) | null = null;
  private readonly request: unknown;
  private readonly raw: string | undefined;
  private closeHandlers: (() => void)[] = [];
  /**
   * With n > 1: each choice's token fields (tagged `choice:<i>`). The call is then stored as one
   * llm_call record per choice (same request and response), all in one transaction.
   */
  choices: Partial<NewLlmCall>[] | null = null;
  /** What is known so far (backend, partial tokens), for the record of a cancelled call. */
  snapshot: (() => Partial<NewLlmCall>) | null = null;

  constructor(init: CallInit) {
    this.ctx = init.ctx;
    this.recorder = init.recorder;
    this.reply = init.reply;
    this.wire = init.wire;
    this.errorWire = init.errorWire;
    this.scope = init.scope;
    this.request = init.request;
    this.raw = init.raw;
    this.t0 = init.t0;
    this.tags = init.tags;
    const res = init.reply.raw;
    res.on('close', () => {
      if (res.writableFinished) return;
      for (const h of this.closeHandlers) h();
    });
  }

  elapsed(): number {
    return Math.round((performance.now() - this.t0) * 1000) / 1000;
  }

  /** Runs when the harness goes away before the response is complete. */
  onClientClose(handler: () => void): void {
    this.closeHandlers.push(handler);
  }

  setAbort(fn: (() => void) | null): void {
    this.abortFn = fn;
  }

  abortBackend(): void {
    const fn = this.abortFn;
    this.abortFn = null;
    fn?.();
  }

  /** Stores the call (once); a rollout-less call (refused before a scope was known) stores nothing. */
  async record(fields: Partial<NewLlmCall>): Promise<void> {
    if (!this.scope || this.recorded) return;
    this.recorded = true;
    const s = this.scope;
    const call: NewLlmCall = {
      rollout_id: s.rolloutId,
      attempt_id: s.attemptId,
      recording_id: s.recording?.id ?? null,
      wire_api: this.wire,
      stream: this.stream,
      request: this.request ?? null,
      backend_request: null,
      response: null,
      prompt_ids: null,
      response_ids: null,
      response_logprobs: null,
      token_source: 'text',
      bridge: null,
      finish_reason: null,
      usage: null,
      model: null,
      model_version: null,
      backend: null,
      status: 'ok',
      error: null,
      http_status: null,
      tags: this.tags,
      queue_ms: null,
      ttft_ms: null,
      total_ms: this.elapsed(),
      ...fields,
    };
    // Bodies are walked only when the request carries something key-like (the common case skips it);
    // what the backend got and returned derives from the request, so it is redacted alike.
    // Otherwise the request is stored as the harness sent it (its text, not re-serialised).
    if (this.raw === undefined || hasSecret(this.raw, s.secrets)) {
      call.request = redact(call.request, s.secrets);
      if (call.backend_request != null)
        call.backend_request = redact(plainValue(call.backend_request), s.secrets);
      if (call.response != null) call.response = redact(plainValue(call.response), s.secrets);
    } else if (call.request === this.request && this.request != null)
      call.request = new JsonText(this.raw, this.request);
    const choices = this.choices;
    if (choices && choices.length > 1)
      await this.recorder.recordAll(
        choices.map((c) => ({ ...call, ...c, tags: [...call.tags, ...(c.tags ?? [])] })),
      );
    else await this.recorder.record(call);
  }

  /** Records a failed call and answers the harness with an error in its wire format. */
  async fail(err: ProxyError, fields: Partial<NewLlmCall> = {}, output?: Output): Promise<void> {
    if (this.settled) return;
    this.settled = true;
    try {
      await this.record({ status: 'error', error: err.message, http_status: err.status, ...fields });
    } catch (e) {
      this.ctx.log('proxy: recording a failed call failed', { error: String(e) });
    }
    const body = output
      ? output.error(err.status, err.message, err.param, err.code)
      : errorBody(this.errorWire, err);
    if (this.reply.sent || this.reply.raw.headersSent) {
      this.reply.raw.destroy();
      return;
    }
    if (err.retryAfterS !== null) this.reply.header('retry-after', String(err.retryAfterS));
    this.reply
      .code(err.status)
      .header('content-type', 'application/json; charset=utf-8')
      .send(JSON.stringify(body));
  }
}

/**
 * A backend's JSON answer, or null when it is not JSON or nests deeper than MAX_JSON_DEPTH (nothing
 * may walk such a value: the record keeps the text instead).
 */
export function parseBackendJson(text: string): Json | null {
  try {
    return parseBoundedJson(text);
  } catch {
    return null;
  }
}

/** Message of a backend error body (vLLM `{message}`, OpenAI `{error:{message}}`, or raw text). */
export function backendErrorMessage(text: string): string {
  try {
    const j = parseBackendJson(text);
    const m = j?.error?.message ?? j?.message ?? j?.detail ?? j?.error;
    if (typeof m === 'string') return m;
    if (m != null) return JSON.stringify(m).slice(0, 1000);
  } catch {
    // not JSON
  }
  return text.slice(0, 1000) || '(empty body)';
}

/** The request body for the backend: the harness's plus what makes vLLM return ids and logprobs. */
export function backendBody(body: Json, kind: BackendKind, extras: boolean): Json {
  const out: Json = Object.assign({}, body); // see fieldsOf: a spread here made adding the extras slow
  if (!extras) return out;
  out.return_token_ids = true;
  if (kind === 'chat') out.logprobs = true;
  else if (typeof body.logprobs !== 'number' || body.logprobs < 1) out.logprobs = 1;
  return out;
}

/** Decides, once the backend is known, whether to send a bridged token prompt instead of `sent`. */
export type BridgeFn = (b: Pick<Backend, 'root' | 'maxModelLen'>, sent: Json) => Promise<BridgeDecision>;

export interface Dispatched {
  res: BackendResponse;
  /** Set when the token-in-token-out bridge sent a token prompt to /v1/completions. */
  bridged: { prompt_ids: number[]; reused_tokens: number; thinking: boolean } | null;
  /** Why the bridge was not used, as recorded (null when it was, or was not asked for). */
  fallback: BridgeRecord | null;
  /** The chat body (what the bridge was asked about), even when a completions body was sent. */
  chatBody: Json;
  backend: Backend | null;
  backendName: string;
  modelVersion: number | null;
  body: Json;
  payload: string;
  release(): void;
  queueMs: number;
}

/** The token prompt the bridge decided to send, if it did. */
function bridgedOf(decision: BridgeDecision | null): Dispatched['bridged'] {
  return decision?.ok
    ? { prompt_ids: decision.prompt_ids, reused_tokens: decision.reused_tokens, thinking: decision.thinking }
    : null;
}

/** Why the bridge did not send a token prompt, as the call records it. */
function fallbackOf(decision: BridgeDecision | null): BridgeRecord | null {
  if (!decision || decision.ok) return null;
  return decision.change
    ? { fallback: decision.reason, change: decision.change }
    : { fallback: decision.reason };
}

/**
 * Sends `body` to a backend: the pool (affinity + least outstanding, failing over when a backend
 * cannot be reached) or a fixed target. Throws ProxyError (503/502/504) when nothing answers.
 */
export async function dispatch(
  call: Call,
  pool: BackendPool,
  kind: BackendKind,
  body: Json,
  target: FixedTarget | null,
  bridge?: BridgeFn,
): Promise<Dispatched> {
  const path = kind === 'chat' ? '/v1/chat/completions' : '/v1/completions';
  const timeoutMs = call.ctx.config.backend_timeout_ms;
  if (target) {
    const sent = servedBody(body, target.served);
    const decision = bridge
      ? await bridge({ root: target.root, maxModelLen: target.maxModelLen ?? null }, sent)
      : null;
    if (call.settled) throw new ProxyError(499, 'the client closed the request');
    const sendBody = decision?.ok ? decision.body : sent;
    const payload = JSON.stringify(sendBody);
    call.snapshot = () => ({
      backend_request: sendBody,
      backend: target.name,
      model: typeof sent.model === 'string' ? sent.model : null,
    });
    const queueMs = call.elapsed();
    try {
      const res = await send(target.root + (decision?.ok ? '/v1/completions' : path), {
        body: payload,
        headers: target.headers,
        timeoutMs,
        onRequest: (abort) => call.setAbort(abort),
      });
      return {
        res,
        bridged: bridgedOf(decision),
        fallback: fallbackOf(decision),
        chatBody: sent,
        backend: null,
        backendName: target.name,
        modelVersion: null,
        body: sendBody,
        payload,
        release: () => {},
        queueMs,
      };
    } catch (e) {
      throw sendFailure(e, target.name);
    }
  }
  const tried = new Set<Backend>();
  const runModel = call.scope?.runConfig?.model?.name;
  /** Each backend that could not be reached this call, and why (the 502 names them all). */
  const unreachable: { name: string; error: SendError }[] = [];
  for (;;) {
    const runId = call.scope?.rollout.run_id ?? null;
    const b = pool.pick(call.scope?.rolloutId ?? null, tried, runId);
    if (!b && tried.size === 0 && pool.loading(runId)) {
      // New weights are loading: wait for them (or say when to retry) instead of failing.
      if (call.scope?.runConfig?.inference?.while_loading === 'reject')
        throw new ProxyError(
          429,
          'the inference backends of this run are loading new weights; retry shortly',
          null,
          'weights_loading',
          2,
        );
      if (await pool.changed(Math.max(0, timeoutMs - call.elapsed()))) continue;
    }
    if (!b) {
      if (unreachable.length > 0) throw unreachableFailure(unreachable);
      throw new ProxyError(
        503,
        pool.size === 0
          ? 'no inference backend is configured (start the daemon with --backend URL or start a run)'
          : 'no healthy inference backend serves the required model version right now',
        null,
        'no_backend',
      );
    }
    // Served names not known yet (the backend was down when it joined, e.g. a node whose vLLM is
    // still starting): ask now, as long as the call may wait, so a name it does not serve (a LoRA
    // adapter before the first step's weights are loaded) is rewritten instead of answered with 404.
    if (b.models === null) {
      if (b.modelsLoading) await b.modelsLoading;
      if (b.models === null) await pool.refreshModels(b, Math.max(1, Math.round(timeoutMs - call.elapsed())));
    }
    const sent = servedBody(body, b.models, runModel);
    let bridged: Dispatched['bridged'] = null;
    let fallback: BridgeRecord | null = null;
    let sendBody = sent;
    let sendPath = path;
    if (bridge) {
      const decision = await bridge(b, sent);
      if (decision.ok) {
        bridged = bridgedOf(decision);
        sendBody = decision.body;
        sendPath = '/v1/completions';
      } else fallback = fallbackOf(decision);
      if (call.settled) throw new ProxyError(499, 'the client closed the request');
    }
    const payload = JSON.stringify(sendBody);
    call.snapshot = () => ({
      backend_request: sendBody,
      backend: b.name,
      model: typeof sent.model === 'string' ? sent.model : null,
      model_version: b.modelVersion,
    });
    b.outstanding++;
    b.total++;
    let released = false;
    const release = () => {
      if (!released) {
        released = true;
        b.outstanding--;
      }
    };
    const queueMs = call.elapsed();
    try {
      const res = await send(b.root + sendPath, {
        body: payload,
        timeoutMs,
        onRequest: (abort) => call.setAbort(abort),
      });
      pool.markHealthy(b);
      return {
        res,
        bridged,
        fallback,
        chatBody: sent,
        backend: b,
        backendName: b.name,
        modelVersion: b.modelVersion,
        body: sendBody,
        payload,
        release,
        queueMs,
      };
    } catch (e) {
      release();
      if (e instanceof SendError && e.kind === 'connect' && !call.settled) {
        pool.markUnhealthy(b, e.message);
        tried.add(b);
        unreachable.push({ name: b.name, error: e });
        continue;
      }
      throw sendFailure(e, b.name);
    }
  }
}

/** What went wrong talking to one backend, without send()'s generic prefix. */
function detail(e: SendError): string {
  return e.message.replace(/^cannot reach backend: /, '');
}

function sendFailure(e: unknown, name: string): ProxyError {
  if (e instanceof ProxyError) return e;
  if (e instanceof SendError) {
    if (e.kind === 'timeout')
      return new ProxyError(504, `backend ${name} timed out: ${e.message}`, null, 'backend_timeout');
    if (e.kind === 'aborted') return new ProxyError(499, 'the client closed the request', null, 'cancelled');
    if (e.kind === 'connect')
      return new ProxyError(
        502,
        `backend ${name} could not be reached: ${detail(e)}`,
        null,
        'backend_unreachable',
      );
    return new ProxyError(502, `backend ${name} failed: ${e.message}`, null, 'backend_error');
  }
  return new ProxyError(
    502,
    `backend ${name} failed: ${e instanceof Error ? e.message : String(e)}`,
    null,
    'backend_error',
  );
}

/** The 502 after failing over through every backend: each one by name, with how it failed. */
function unreachableFailure(list: { name: string; error: SendError }[]): ProxyError {
  if (list.length === 1) return sendFailure(list[0].error, list[0].name);
  return new ProxyError(
    502,
    `none of the ${list.length} inference backends could be reached: ${list
      .map((u) => `${u.name} (${detail(u.error)})`)
      .join('; ')}`,
    null,
    'backend_unreachable',
  );
}

/**
 * The record fields of `parts`, later ones winning, as `{...a, ...b, c}` would give. Not written as a
 * spread: V8 (Node 20) defines each property that follows a spread in an object literal through a
 * runtime call (about 20 µs for a call's record fields on this machine); Object.assign takes < 1 µs.
 */
function fieldsOf(...parts: Partial<NewLlmCall>[]): Partial<NewLlmCall> {
  return Object.assign({}, ...parts);
}

function tokenFields(t: Tokens, source: 'backend' | 'bridge' = 'backend'): Partial<NewLlmCall> {
  return {
    prompt_ids: t.prompt_ids,
    response_ids: t.response_ids,
    response_logprobs: t.response_logprobs,
    finish_reason: t.finish_reason,
    usage: t.usage,
    token_source: t.prompt_ids && t.response_ids ? source : 'text',
  };
}

/** With several choices (n > 1): the token fields of each, tagged `choice:<i>`; null for one choice. */
function choiceFields(
  json: Json,
  kind: BackendKind,
  source: 'backend' | 'bridge',
): Partial<NewLlmCall>[] | null {
  const indexes = choiceIndexes(json);
  if (indexes.length <= 1) return null;
  return indexes.map((i) => {
    const t = tokensOf(json, kind, i);
    const f = tokenFields(t, source);
    if (t.usage && t.response_ids)
      f.usage = { prompt_tokens: t.usage.prompt_tokens, completion_tokens: t.response_ids.length };
    f.tags = [`choice:${i}`];
    return f;
  });
}

export interface RunOptions {
  kind: BackendKind;
  /** The body as the backend should get it (extras already added). */
  body: Json;
  stream: boolean;
  output: Output;
  target: FixedTarget | null;
  /** Extra fields for the record. */
  extra?: Partial<NewLlmCall>;
  /** Token-in-token-out: bridge chat requests of this rollout through recorded tokens. */
  tito?: BridgeMemory;
}

/** The whole life of one call through the pool or a fixed vLLM/OpenAI target. Never throws. */
export async function runCall(call: Call, pool: BackendPool, o: RunOptions): Promise<void> {
  call.stream = o.stream;
  call.onClientClose(() => {
    if (call.settled) return;
    call.settled = true;
    call.abortBackend();
    void call
      .record({
        ...(call.snapshot?.() ?? { backend_request: o.body, ...o.extra }),
        status: 'cancelled',
        error: 'the client closed the connection',
        http_status: 499,
      })
      .catch((e) => call.ctx.log('proxy: recording a cancelled call failed', { error: String(e) }));
  });
  const scope = call.scope;
  const memory = o.tito;
  const bridge: BridgeFn | undefined =
    memory && scope && o.kind === 'chat'
      ? (b, sent) => memory.decide(scope.rolloutId, scope.attemptId, sent, b.root, b.maxModelLen)
      : undefined;
  let d: Dispatched;
  try {
    d = await dispatch(call, pool, o.kind, o.body, o.target, bridge);
  } catch (e) {
    const err = e instanceof ProxyError ? e : new ProxyError(502, String(e));
    if (err.status === 499) return;
    await call.fail(
      err,
      { ...(call.snapshot?.() ?? { backend_request: o.body, model: o.body.model ?? null }), ...o.extra },
      o.output,
    );
    return;
  }
  const base: Partial<NewLlmCall> = {
    backend_request: new JsonText(d.payload, d.body),
    model: typeof d.body.model === 'string' ? d.body.model : null,
    model_version: d.modelVersion,
    backend: d.backendName,
    queue_ms: d.queueMs,
    bridge: d.bridged
      ? { reused_tokens: d.bridged.reused_tokens, prompt_tokens: d.bridged.prompt_ids.length }
      : d.fallback,
    ...o.extra,
  };
  const remember = (json: Json) => {
    if (memory && scope && json) memory.remember(scope.rolloutId, scope.attemptId, d.chatBody, json);
  };
  call.snapshot = () => base;
  try {
    const ctype = String(d.res.headers['content-type'] ?? '');
    if (!o.stream || d.res.statusCode !== 200 || !ctype.includes('text/event-stream'))
      await finishWhole(call, d, o, base, remember);
    else await finishStream(call, d, o, base, remember);
  } finally {
    d.release();
    call.setAbort(null);
  }
}

async function finishWhole(
  call: Call,
  d: Dispatched,
  o: RunOptions,
  base: Partial<NewLlmCall>,
  remember: (json: Json) => void,
): Promise<void> {
  let text: string;
  try {
    text = await readText(d.res);
  } catch (e) {
    if (call.settled) return;
    await call.fail(sendFailure(e, d.backendName), base, o.output);
    return;
  }
  if (call.settled) return;
  const status = d.res.statusCode ?? 502;
  let json: Json | null = parseBackendJson(text);
  if (status >= 400) {
    const message = `backend ${d.backendName} answered ${status}: ${backendErrorMessage(text)}`;
    await call.fail(
      new ProxyError(status >= 500 ? 502 : status, message, null, 'backend_error'),
      {
        ...base,
        response: json ?? text.slice(0, 10_000),
      },
      o.output,
    );
    return;
  }
  if (!json || typeof json !== 'object' || !Array.isArray(json.choices)) {
    const what = o.stream ? 'a non-stream answer to a stream request' : 'a response that is not a completion';
    await call.fail(
      new ProxyError(
        502,
        `backend ${d.backendName} returned ${what}: ${text.slice(0, 200)}`,
        null,
        'backend_garbage',
      ),
      { ...base, response: json ?? text.slice(0, 10_000) },
      o.output,
    );
    return;
  }
  if (d.bridged)
    json = completionToChat(json, {
      model: String(d.chatBody.model),
      prompt_ids: d.bridged.prompt_ids,
      thinking: d.bridged.thinking,
    });
  // Before the output strips the extras in place.
  const tokens = tokensOf(json, o.kind);
  call.choices = choiceFields(json, o.kind, d.bridged ? 'bridge' : 'backend');
  remember(json);
  let out: unknown;
  try {
    out = o.output.finish(json);
  } catch (e) {
    await call.fail(
      new ProxyError(502, `could not translate the backend response: ${String(e)}`),
      base,
      o.output,
    );
    return;
  }
  const total = call.elapsed();
  call.settled = true;
  const answer = JSON.stringify(out);
  try {
    await call.record(
      fieldsOf(base, tokenFields(tokens, d.bridged ? 'bridge' : 'backend'), {
        response: new JsonText(answer, out),
        http_status: 200,
        ttft_ms: total,
        total_ms: total,
      }),
    );
  } catch (e) {
    call.settled = false;
    call.recorded = true;
    await call.fail(new ProxyError(500, `the call could not be recorded: ${String(e)}`), {}, o.output);
    return;
  }
  // Straight to the socket: the record is committed, nothing else needs fastify's reply pipeline.
  call.reply.hijack();
  call.reply.raw.writeHead(200, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(answer),
  });
  call.reply.raw.end(answer);
}

async function finishStream(
  call: Call,
  d: Dispatched,
  o: RunOptions,
  base: Partial<NewLlmCall>,
  remember: (json: Json) => void,
): Promise<void> {
  const raw = call.reply.raw;
  call.reply.hijack();
  raw.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
  });
  const asm = new StreamAssembler(o.kind, { logprobEntries: o.output.logprobEntries });
  const out = o.output.open();
  const parser = new SseParser();
  const conv = d.bridged
    ? new CompletionToChatStream({
        model: String(d.chatBody.model),
        prompt_ids: d.bridged.prompt_ids,
        thinking: d.bridged.thinking,
      })
    : null;
  let ttft: number | null = null;
  let sawDone = false;

  /** The record so far; `json` (asm.result()) is consumed: the native output strips it in place. */
  const partial = (json: Json = asm.result()): Partial<NewLlmCall> => {
    const source = d.bridged ? 'bridge' : 'backend';
    const tokens = tokenFields(tokensOf(json, o.kind), source);
    call.choices = choiceFields(json, o.kind, source);
    let response: unknown = null;
    try {
      response = asm.chunks > 0 ? out.assembled(asm, json) : null;
    } catch {
      response = json;
    }
    return fieldsOf(base, tokens, { response, ttft_ms: ttft, http_status: 200 });
  };

  call.snapshot = () => partial();
  await new Promise<void>((resolve) => {
    const finish = (fn: () => Promise<void>) => {
      if (call.settled) return resolve();
      call.settled = true;
      d.res.removeAllListeners('data');
      fn()
        .catch((e) => {
          call.ctx.log('proxy: finishing a stream failed', { error: String(e) });
          if (!raw.destroyed) raw.destroy();
        })
        .finally(resolve);
    };
    const failMid = (message: string, status: 'error' | 'cancelled' = 'error') =>
      finish(async () => {
        call.abortBackend();
        try {
          await call.record(fieldsOf(partial(), { status, error: message }));
        } catch (e) {
          call.ctx.log('proxy: recording a failed stream failed', { error: String(e) });
        }
        if (!raw.destroyed) raw.end(takePending() + out.error(message));
      });
    const complete = () =>
      finish(async () => {
        // The closing frames first: a translator's end() completes its open output item, so what is
        // recorded is the final response the client gets (Responses: `response.completed`).
        const closing = out.end();
        try {
          const json = asm.result();
          remember(json);
          await call.record(fieldsOf(partial(json), { status: 'ok', total_ms: call.elapsed() }));
        } catch (e) {
          if (!raw.destroyed)
            raw.end(takePending() + out.error(`the call could not be recorded: ${String(e)}`));
          return;
        }
        if (!raw.destroyed) raw.end(takePending() + closing);
      });
    call.onClientClose(() => resolve());

    const onEvent = (data: string): boolean => {
      if (data === '[DONE]') {
        sawDone = true;
        return true;
      }
      const obj = parseBackendJson(data);
      if (obj === null) {
        failMid(
          `backend ${d.backendName} sent stream data that is not JSON (or nests too deep): ${data.slice(0, 200)}`,
        );
        return false;
      }
      if (obj && (obj.error || obj.object === 'error')) {
        failMid(`backend ${d.backendName} reported an error mid-stream: ${backendErrorMessage(data)}`);
        return false;
      }
      if (ttft === null && Array.isArray(obj.choices) && obj.choices.length > 0) {
        const c = obj.choices[0];
        if ((c.token_ids && c.token_ids.length > 0) || c.delta?.content || c.delta?.tool_calls || c.text)
          ttft = call.elapsed();
      }
      if (conv) for (const c of conv.push(obj)) forward(c, null);
      else forward(obj, data);
      return true;
    };
    const forward = (obj: Json, data: string | null) => {
      asm.push(obj);
      pending += out.chunk(obj, data ?? JSON.stringify(obj));
    };
    // Frames that arrived in one event-loop turn (libuv reads a socket many times per poll phase, a
    // few hundred bytes each) go out in one write right after it: one syscall instead of dozens,
    // no added latency beyond the end of the current poll phase.
    let pending = '';
    let scheduled = false;
    const flushNow = () => {
      scheduled = false;
      if (!pending || call.settled || raw.destroyed) return;
      const ok = raw.write(pending);
      pending = '';
      if (!ok) {
        d.res.pause();
        raw.once('drain', () => d.res.resume());
      }
    };
    const flush = () => {
      if (!pending || scheduled) return;
      scheduled = true;
      setImmediate(flushNow);
    };
    /** The frames not yet written, taken (for the final write, which carries them). */
    const takePending = () => {
      const p = pending;
      pending = '';
      return p;
    };

    // Nothing thrown while relaying (a translator, a malformed chunk) may escape: it fails the call.
    const guard = (fn: () => void) => {
      try {
        fn();
      } catch (e) {
        failMid(`proxy error while relaying the stream: ${e instanceof Error ? e.message : String(e)}`);
      }
    };
    d.res.on('data', (buf: Buffer) =>
      guard(() => {
        if (call.settled) return;
        for (const ev of parser.push(buf)) if (!onEvent(ev.data) || call.settled) return;
        flush();
      }),
    );
    d.res.on('end', () =>
      guard(() => {
        if (call.settled) return;
        for (const ev of parser.flush()) if (!onEvent(ev.data) || call.settled) return;
        if (sawDone && conv) for (const c of conv.end()) forward(c, null);
        // The content goes out now; only the closing frame waits for the record's commit.
        flushNow();
        if (sawDone) complete();
        else failMid(`backend ${d.backendName} ended the stream before [DONE]`);
      }),
    );
    d.res.on('close', () => {
      if (call.settled || d.res.complete) return;
      failMid(
        timedOut.has(d.res)
          ? `backend ${d.backendName} went silent mid-stream (timeout ${call.ctx.config.backend_timeout_ms} ms)`
          : `backend ${d.backendName} closed the connection mid-stream`,
      );
    });
  });
}
