// What every proxy route shares: the daemon, the backend pool, scopes, upstreams, the call policy and
// the recorder; and the steps every route begins with (a Call for the request, its scope).
import type { ServerResponse } from 'node:http';
import type { DaemonContext } from '../../context';
import { errorText } from '../../error-text';
import type { WireApi } from '../../protocol/entities';
import type { BackendPool } from '../backends';
import { Call } from '../call';
import { ProxyError } from '../errors';
import type { ProxyRequest } from '../front';
import type { Output } from '../output';
import type { CallPolicy } from '../policy';
import type { PromptIdsMemo } from '../prompt-ids';
import type { Recorder } from '../recorder';
import { keyOf, type Scope, type Scopes } from '../scope';
import type { Upstreams } from '../upstream';

export interface ProxyDeps {
  ctx: DaemonContext;
  pool: BackendPool;
  scopes: Scopes;
  upstreams: Upstreams;
  policy: CallPolicy;
  recorder: Recorder;
  /** Each rollout's last chat answer's prompt ids (pipeline: parsing only what the next one adds). */
  promptIds: PromptIdsMemo;
}

export type Handler = (req: ProxyRequest, res: ServerResponse) => Promise<unknown>;

/** The scope of a request from its path and key (throws ProxyError 401/403/404/409). */
export function scopeOf(d: ProxyDeps, req: ProxyRequest): Promise<Scope> {
  const key = keyOf(req.headers);
  return req.rid !== undefined ? d.scopes.forRollout(req.rid, key) : d.scopes.forUnscoped(key);
}

/**
 * Finds `call`'s scope and tags a recording's side call; null when the scope was refused (the call
 * has failed with it, in `early`'s wire format when given).
 */
export async function begin(
  d: ProxyDeps,
  call: Call,
  req: ProxyRequest,
  body: unknown,
  early?: Output,
): Promise<Scope | null> {
  try {
    call.scope = await scopeOf(d, req);
  } catch (e) {
    await call.fail(asProxyError(e), {}, early);
    return null;
  }
  call.tags.push(...d.policy.sideTags(call.scope, body));
  return call.scope;
}

/**
 * A call of `req`. A body that could not be parsed (malformed, nested too deep) is recorded as its
 * raw text, truncated, so nothing ever walks it.
 */
export function newCall(
  d: ProxyDeps,
  req: ProxyRequest,
  res: ServerResponse,
  wire: WireApi,
  t0: number,
): Call {
  const raw = req.raw;
  const parsed = req.body !== undefined || raw === undefined || raw.trim() === '';
  const call = new Call({
    ctx: d.ctx,
    recorder: d.recorder,
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
}

/** The first RAW_KEEP characters of an unparsable body, marked when cut. */
const RAW_KEEP = 10_000;
function truncate(raw: string): string {
  return raw.length <= RAW_KEEP
    ? raw
    : `${raw.slice(0, RAW_KEEP)}… (${raw.length - RAW_KEEP} more characters)`;
}

/** Google clients may send the key as `?key=` instead of x-goog-api-key: read it as that header. */
export function geminiKey(req: ProxyRequest): void {
  const key = new URLSearchParams(req.search).get('key');
  if (key !== null && !keyOf(req.headers)) req.headers['x-goog-api-key'] = key;
}

export function asProxyError(e: unknown): ProxyError {
  if (e instanceof ProxyError) return e;
  return new ProxyError(500, `proxy error: ${errorText(e)}`, null, 'internal');
}
