// Sending a call to an inference backend: the pool (affinity, least outstanding, fail-over, waiting
// while weights load) or a fixed target as a pool of one, with the token bridge's decision applied.
import { errorText } from '../error-text';
import { type BackendResponse, SendError, send, sendWhole, type WholeResponse } from '../http';
import type { BridgeRecord } from '../protocol/entities';
import type { BackendKind } from './assemble';
import type { Backend, BackendPool } from './backends';
import type { BridgeDecision } from './bridge';
import type { Call } from './call';
import { ProxyError } from './errors';
import type { Json } from './json';

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

/** Where dispatch picks its backend: the pool, or a fixed target as a pool of one (onePool). */
export type Route = Pick<
  BackendPool,
  'pick' | 'loading' | 'changed' | 'refreshModels' | 'markHealthy' | 'markUnhealthy' | 'size'
>;

/**
 * A fixed target as a pool of one: always picked (no health kept, no fail-over), serving what its
 * upstream said it serves (nothing asked again), with its own headers.
 */
export function onePool(target: FixedTarget): Route {
  const b: Backend = {
    url: target.root,
    root: target.root,
    name: target.name,
    headers: target.headers,
    runId: null,
    modelVersion: null,
    outstanding: 0,
    total: 0,
    unhealthyUntil: 0,
    lastError: null,
    models: target.served ?? null,
    maxModelLen: target.maxModelLen ?? null,
    modelsLoading: null,
    loading: false,
    ready: true,
    weights: null,
  };
  return {
    pick: (_key, exclude) => (exclude?.has(b) ? null : b),
    loading: () => false,
    changed: async () => false,
    refreshModels: async () => {},
    markHealthy: () => {},
    markUnhealthy: () => {},
    size: 1,
  };
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

/** A dispatched call; its response read whole (a non-streamed call's), or streamed. */
export interface Dispatched<R extends BackendResponse | WholeResponse = BackendResponse | WholeResponse> {
  res: R;
  /** Set when the token-in-token-out bridge sent a token prompt to /v1/completions. */
  bridged: Pick<
    Extract<BridgeDecision, { ok: true }>,
    'prompt_ids' | 'reused_tokens' | 'thinking' | 'note'
  > | null;
  /** Why the bridge was not used, as recorded (null when it was, or was not asked for). */
  fallback: BridgeRecord | null;
  /** The chat body (what the bridge was asked about), even when a completions body was sent. */
  chatBody: Json;
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
    ? {
        prompt_ids: decision.prompt_ids,
        reused_tokens: decision.reused_tokens,
        thinking: decision.thinking,
        note: decision.note,
      }
    : null;
}

/** Why the bridge did not send a token prompt, as the call records it. */
function fallbackOf(decision: BridgeDecision | null): BridgeRecord | null {
  if (!decision || decision.ok) return null;
  return {
    fallback: decision.reason,
    ...(decision.change ? { change: decision.change } : {}),
    ...decision.note,
  };
}

/**
 * The JSON text of `backend` (backendBody of `harness`) made from the harness's own text: the keys
 * backendBody added or changed are appended before its closing brace (of duplicate keys the last one
 * counts, for JSON.parse and for vLLM's parser alike), so a long history is not serialised again and
 * everything else goes out as the harness wrote it. Null when the text is not reusable.
 */
export function backendText(harnessText: string | undefined, harness: Json, backend: Json): string | null {
  if (harnessText === undefined) return null;
  const end = harnessText.lastIndexOf('}');
  if (end < 0 || harnessText.charCodeAt(0) !== 123 /* { */ || harnessText.slice(end + 1).trim() !== '')
    return null;
  let added = '';
  for (const k in backend)
    if (!Object.hasOwn(harness, k) || harness[k] !== backend[k])
      added += `,${JSON.stringify(k)}:${JSON.stringify(backend[k])}`;
  if (added === '') return harnessText;
  // after `{` (an empty object) the first key takes no comma: left to JSON.stringify
  for (const _ in harness) return `${harnessText.slice(0, end)}${added}}`;
  return null;
}

/**
 * Sends `body` to a backend of `route` (the pool: affinity + least outstanding, failing over when a
 * backend cannot be reached; or a fixed target). Throws ProxyError (503/502/504) when nothing answers.
 */
export async function dispatch(
  call: Call,
  route: Route,
  kind: BackendKind,
  body: Json,
  bridge?: BridgeFn,
  /** `body`'s JSON text, when known (backendText). */
  bodyText?: string | null,
): Promise<Dispatched> {
  const timeoutMs = call.ctx.config.backend_timeout_ms;
  const tried = new Set<Backend>();
  const runModel = call.scope?.runConfig?.model?.name;
  /** Each backend that could not be reached this call, and why (the 502 names them all). */
  const unreachable: { name: string; error: SendError }[] = [];
  for (;;) {
    const runId = call.scope?.rollout.run_id ?? null;
    const b = route.pick(call.scope?.rolloutId ?? null, tried, runId);
    if (!b && tried.size === 0 && route.loading(runId)) {
      // New weights are loading: wait for them (or say when to retry) instead of failing.
      if (call.scope?.runConfig?.inference?.while_loading === 'reject')
        throw new ProxyError(
          429,
          'the inference backends of this run are loading new weights; retry shortly',
          null,
          'weights_loading',
          2,
        );
      if (await route.changed(Math.max(0, timeoutMs - call.elapsed()))) continue;
    }
    if (!b) {
      if (unreachable.length > 0) throw unreachableFailure(unreachable);
      throw new ProxyError(
        503,
        route.size === 0
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
      if (b.models === null)
        await route.refreshModels(b, Math.max(1, Math.round(timeoutMs - call.elapsed())));
    }
    const served = servedBody(body, b.models, runModel);
    const out = await sendTo(call, b, route, kind, {
      sent: served,
      textOf: (j) => (j === body && bodyText ? bodyText : JSON.stringify(j)),
      bridge,
    });
    if (!(out instanceof SendError)) return out;
    tried.add(b);
    unreachable.push({ name: b.name, error: out });
  }
}

/**
 * `o.sent` (or the bridge's token prompt) sent to `b`: the dispatched call, or why `b` could not be
 * reached (it is marked unhealthy; the caller tries the next backend). Throws for any other failure.
 */
async function sendTo(
  call: Call,
  b: Backend,
  route: Route,
  kind: BackendKind,
  o: { sent: Json; textOf: (body: Json) => string; bridge: BridgeFn | undefined },
): Promise<Dispatched | SendError> {
  const sent = o.sent;
  const decision = o.bridge ? await o.bridge(b, sent) : null;
  if (call.settled) throw new ProxyError(499, 'the client closed the request');
  const sendBody = decision?.ok ? decision.body : sent;
  const payload = (decision?.ok ? decision.bodyText : null) ?? o.textOf(sendBody);
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
    // A call that did not ask to stream is read whole, whatever the backend sends.
    const res = await (call.stream ? send : sendWhole)(
      b.root + (decision?.ok || kind !== 'chat' ? '/v1/completions' : '/v1/chat/completions'),
      {
        // the bridged body's bytes, written beside its text (the record keeps the text)
        body: (decision?.ok ? decision.bodyBytes : null) ?? payload,
        headers: b.headers,
        timeoutMs: call.ctx.config.backend_timeout_ms,
        onRequest: (abort) => call.setAbort(abort),
      },
    );
    route.markHealthy(b);
    return {
      res,
      bridged: bridgedOf(decision),
      fallback: fallbackOf(decision),
      chatBody: sent,
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
      route.markUnhealthy(b, e.message);
      return e;
    }
    throw sendFailure(e, b.name);
  }
}

/** What went wrong talking to one backend, without send()'s generic prefix. */
function detail(e: SendError): string {
  return e.message.replace(/^cannot reach backend: /, '');
}

export function sendFailure(e: unknown, name: string): ProxyError {
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
  return new ProxyError(502, `backend ${name} failed: ${errorText(e)}`, null, 'backend_error');
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
