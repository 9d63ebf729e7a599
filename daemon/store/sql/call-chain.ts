// An agent's calls repeat each other: call k's prompt ids are call k-1's prompt and answer plus what
// came since (a tool result, the next user turn), and its request resends the history as text. Stored
// whole, a rollout's ids and text grow with the square of its turns. Here a call may be stored as the
// rest after an earlier call of its chain (its base, `base_call`):
//   prompt_shared  how many leading ids of the base's prompt ids, then its response ids, the prompt
//                  shares; prompt_ids holds the ids after them (null: prompt_ids is the whole list);
//   request_shared how many leading characters of the base's request text the request shares;
//                  request_rest holds the text after them, and `request` the JSON `null` (null: the
//                  request is whole in `request`).
// And a backend request that repeats its own call's request (the proxy appends its extras), or its
// base's backend request (a bridged call's token prompt grows like the prompt ids), is stored as
// backend_shared characters of that text (backend_from_base says which) and backend_rest. Reads
// rebuild every body and list; nothing outside the store sees a chain.
//
// Bases are calls this store committed, of the same rollout, attempt and recording (so a base is
// deleted with the calls that build on it), remembered in memory (within a byte budget, until the
// rollout's attempt is over); a call with none (an attempt's first, after a restart, or another
// daemon's on a shared PostgreSQL) is stored whole, and so is every MAX_DEPTH-th call of a chain:
// reading one call alone takes one recursive query.
import { BoundedMap } from '../../bounded-map';
import { attemptOver, type LlmCall, type NewLlmCall } from '../../protocol/entities';
import type { DaemonEvent } from '../../protocol/events';
import { decodeIdsOrNull } from '../codec';
import type { Queryable, Row } from '../driver';
import { StoreError } from '../store';

type Ids = ArrayLike<number>;

/** Calls stored from a base, at most, between two stored whole. */
export const MAX_DEPTH = 16;
/** Less in common than this (ids, characters): stored whole (a link costs a read for little saved). */
const MIN_SHARED_IDS = 256;
const MIN_SHARED_CHARS = 1024;
/** Bytes the remembered bases may hold together (their id arrays at 8 bytes an id, texts at 1). */
const BUDGET_BYTES = 96 * 1024 * 1024;

interface Base {
  id: string;
  prompt: Ids;
  response: Ids;
  request: string | null;
  backend: string | null;
  /** Links to the nearest call stored whole (0: this one is). */
  depth: number;
}

/** What a call shares with its chain's base: ids, request characters, backend request characters. */
export interface Shared {
  base: Base;
  prompt: number | null;
  request: number;
  backend: number;
}

/** What a call is stored from: its base and what it shares with it. */
export interface ChainLink {
  base: string;
  promptShared: number | null;
  requestShared: number | null;
  /** Characters of the base's backend request the call's backend request shares (0: none). */
  backendShared: number;
  depth: number;
}

/** The chain a call belongs to (null: a call with neither rollout nor recording has none). */
export function chainKey(
  call: Pick<NewLlmCall, 'rollout_id' | 'attempt_id' | 'recording_id'>,
): string | null {
  if (call.rollout_id == null && call.recording_id == null) return null;
  return `${call.rollout_id ?? ''}\n${call.attempt_id ?? ''}\n${call.recording_id ?? ''}`;
}

const rolloutOfKey = (key: string): string => key.slice(0, key.indexOf('\n'));

/** How many leading ids of `ids` equal `prompt` followed by `response`. */
function sharedIds(prompt: Ids, response: Ids, ids: Ids): number {
  const n = Math.min(ids.length, prompt.length + response.length);
  const inPrompt = Math.min(n, prompt.length);
  let i = 0;
  while (i < inPrompt && ids[i] === prompt[i]) i++;
  if (i < prompt.length) return i;
  while (i < n && ids[i] === response[i - prompt.length]) i++;
  return i;
}

const CHUNK = 1024;

/**
 * How many leading characters `a` and `b` share. Chunks are compared as substrings: V8 compares two
 * slices of flat strings like memory (about 30x faster here than startsWith or a loop of charCodeAt).
 */
export function sharedChars(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i + CHUNK <= n && a.substring(i, i + CHUNK) === b.substring(i, i + CHUNK)) i += CHUNK;
  while (i < n && a.charCodeAt(i) === b.charCodeAt(i)) i++;
  // Never between the halves of a surrogate pair: the rest would start with a lone low surrogate,
  // which the database's UTF-8 cannot hold (it comes back as U+FFFD and the rebuilt JSON breaks).
  const high = a.charCodeAt(i - 1);
  if (i > 0 && high >= 0xd800 && high <= 0xdbff) i--;
  return i;
}

const bytesOf = (b: Base) =>
  8 * (b.prompt.length + b.response.length) + (b.request?.length ?? 0) + (b.backend?.length ?? 0);

/**
 * The last committed call of each chain, least recently recorded first, within BUDGET_BYTES: past it
 * the chain recorded longest ago loses its base (its next call is stored whole). A rollout's chains
 * go when its attempt is over (`ended`, from the store's own events): nothing builds on them then.
 */
export class CallChains {
  private readonly bases: BoundedMap<string, Base>;
  /** Rollout id → the keys of its chains. */
  private readonly byRollout = new Map<string, Set<string>>();

  constructor(budgetBytes = BUDGET_BYTES) {
    this.bases = new BoundedMap(budgetBytes, (key) => this.unindex(key));
  }

  /** The bytes the bases weigh, and how many chains have one. */
  get held(): { bytes: number; chains: number } {
    return { bytes: this.bases.bytes, chains: this.bases.size };
  }

  /**
   * What a call of the chain `key` shares with the chain's base (null: no base), whether or not it
   * may be stored from it: the redactor scans only what comes after (see ../redact-call.ts).
   */
  compare(
    key: string | null,
    ids: Ids | null,
    request: string | null,
    backend: string | null,
  ): Shared | null {
    if (key === null) return null;
    const b = this.bases.get(key);
    if (!b) return null;
    return {
      base: b,
      prompt: ids === null ? null : sharedIds(b.prompt, b.response, ids),
      request: request === null || b.request === null ? 0 : sharedChars(b.request, request),
      backend: backend === null || b.backend === null ? 0 : sharedChars(b.backend, backend),
    };
  }

  /** The base to store a call of the chain `key` from, or null to store it whole. */
  link(
    key: string | null,
    ids: Ids | null,
    request: string | null,
    backend: string | null,
  ): ChainLink | null {
    return this.linkOf(this.compare(key, ids, request, backend));
  }

  /** The base to store a call from (`shared` from compare), or null to store it whole. */
  linkOf(shared: Shared | null): ChainLink | null {
    if (!shared || shared.base.depth + 1 >= MAX_DEPTH) return null;
    const ps = shared.prompt ?? 0;
    const rs = shared.request;
    const bs = shared.backend;
    if (ps < MIN_SHARED_IDS && rs < MIN_SHARED_CHARS && bs < MIN_SHARED_CHARS) return null;
    return {
      base: shared.base.id,
      promptShared: shared.prompt,
      requestShared: rs === 0 ? null : rs,
      backendShared: bs,
      depth: shared.base.depth + 1,
    };
  }

  /** After its commit: `call` (stored from `link`, or whole) is its chain's base from now on. */
  remember(
    key: string | null,
    call: LlmCall,
    texts: { request: string | null; backend: string | null },
    link: ChainLink | null,
  ): void {
    if (key === null) return;
    const b: Base = {
      id: call.id,
      prompt: call.prompt_ids ?? [],
      response: call.response_ids ?? [],
      request: texts.request,
      backend: texts.backend,
      depth: link?.depth ?? 0,
    };
    const rollout = rolloutOfKey(key);
    let keys = this.byRollout.get(rollout);
    if (!keys) {
      keys = new Set();
      this.byRollout.set(rollout, keys);
    }
    keys.add(key);
    this.bases.set(key, b, bytesOf(b));
  }

  /** After a store event: a rollout whose attempt is over (or a stopped recording's) has no chains to extend. */
  ended(event: DaemonEvent): void {
    if (event.type === 'rollout' && attemptOver(event.rollout)) this.forget(event.rollout.id);
    else if (event.type === 'recording' && event.recording.status === 'stopped')
      this.forget(event.recording.rollout_id);
  }

  private forget(rolloutId: string): void {
    const keys = this.byRollout.get(rolloutId);
    if (!keys) return;
    this.byRollout.delete(rolloutId);
    for (const key of keys) this.bases.delete(key);
  }

  private unindex(key: string): void {
    const rollout = rolloutOfKey(key);
    const keys = this.byRollout.get(rollout);
    keys?.delete(key);
    if (keys?.size === 0) this.byRollout.delete(rollout);
  }
}

/** How a call's request and backend request are written. */
export interface ChainedColumns {
  request: string;
  requestShared: number | null;
  requestRest: string | null;
  backend: string | null;
  backendShared: number | null;
  backendRest: string | null;
  /** backend_shared counts characters of the base's backend request (else of the call's request). */
  backendFromBase: boolean;
}

/** The columns of a call with request text `request` and backend request text `backend`. */
export function chainedColumns(
  link: ChainLink | null,
  request: string,
  backend: string | null,
): ChainedColumns {
  const rs = link?.requestShared ?? null;
  const own = backend === null ? 0 : sharedChars(request, backend);
  const fromBase = (link?.backendShared ?? 0) > own;
  const bs = fromBase ? (link?.backendShared ?? 0) : own;
  const backendLinked = backend !== null && bs >= MIN_SHARED_CHARS;
  return {
    request: rs === null ? request : 'null',
    requestShared: rs,
    requestRest: rs === null ? null : request.slice(rs),
    backend: backendLinked ? null : backend,
    backendShared: backendLinked ? bs : null,
    backendRest: backendLinked ? (backend as string).slice(bs) : null,
    backendFromBase: backendLinked && fromBase,
  };
}

/** A row's stored parts, as the reads need them. */
interface Stored {
  own: number[];
  response: number[];
  base: string | null;
  promptShared: number | null;
  request: string;
  requestShared: number | null;
  requestRest: string;
  backend: string | null;
  backendShared: number | null;
  backendRest: string;
  backendFromBase: boolean;
  /** Rebuilt whole, once. */
  wholeRequest?: string;
  wholeBackend?: string | null;
}

const intOrNull = (v: unknown): number | null => (v == null ? null : Number(v));

function storedOf(r: Row, own: number[] | null, response: number[] | null): Stored {
  return {
    own: own ?? [],
    response: response ?? [],
    base: r.base_call == null ? null : String(r.base_call),
    promptShared: intOrNull(r.prompt_shared),
    request: String(r.request),
    requestShared: intOrNull(r.request_shared),
    requestRest: String(r.request_rest ?? ''),
    backend: r.backend_request == null ? null : String(r.backend_request),
    backendShared: intOrNull(r.backend_shared),
    backendRest: String(r.backend_rest ?? ''),
    backendFromBase: Number(r.backend_from_base ?? 0) === 1,
  };
}

const PARTS = [
  'id',
  'base_call',
  'prompt_shared',
  'prompt_ids',
  'response_ids',
  'request',
  'request_shared',
  'request_rest',
  'backend_request',
  'backend_shared',
  'backend_rest',
  'backend_from_base',
];
/** A call and the calls it is stored from, in one query (no further than a chain can reach). */
const CHAIN = `WITH RECURSIVE chain(${PARTS.join(', ')}, hops) AS (
  SELECT ${PARTS.join(', ')}, 0 FROM llm_calls WHERE id = ?
  UNION ALL
  SELECT ${PARTS.map((c) => `c.${c}`).join(', ')}, chain.hops + 1
  FROM llm_calls c JOIN chain ON c.id = chain.base_call WHERE chain.hops < ${MAX_DEPTH}
) SELECT * FROM chain`;

/** A call's bodies and prompt ids rebuilt whole (undefined: the row holds them whole). */
export interface Whole {
  prompt?: number[];
  request?: string;
  backend?: string;
}

/**
 * The whole bodies and prompt ids of `rows`, whose prompt ids and response ids `decoded` holds (as
 * stored). Bases among the rows are taken from them, the others read with their chains. Each id is
 * copied once, from the row that holds it.
 */
export async function rebuildChains(
  q: Queryable,
  rows: Row[],
  decoded: { prompt: number[] | null; response: number[] | null }[],
): Promise<(Whole | null)[]> {
  if (!rows.some((r) => r.base_call != null || r.backend_shared != null)) return rows.map(() => null);
  const known = new Map<string, Stored>();
  rows.forEach((r, i) => {
    known.set(String(r.id), storedOf(r, decoded[i].prompt, decoded[i].response));
  });
  for (const s of [...known.values()]) {
    if (s.base === null || known.has(s.base)) continue;
    for (const r of await q.all(CHAIN, [s.base]))
      known.set(String(r.id), storedOf(r, decodeIdsOrNull(r.prompt_ids), decodeIdsOrNull(r.response_ids)));
  }
  const chains = new Chains(known);
  return rows.map((r) => chains.whole(String(r.id)));
}

/** Whole prompts and bodies of calls whose chains `known` holds, each shared part copied from its base. */
class Chains {
  constructor(private readonly known: Map<string, Stored>) {}

  whole(id: string): Whole {
    const s = this.known.get(id) as Stored;
    const whole: Whole = {};
    if (s.base !== null && s.promptShared !== null) {
      whole.prompt = new Array<number>(s.promptShared + s.own.length);
      this.fill(id, s, whole.prompt, whole.prompt.length);
    }
    if (s.base !== null && s.requestShared !== null) whole.request = this.requestOf(id, s);
    if (s.backendShared !== null) whole.backend = this.backendOf(id, s) as string;
    return whole;
  }

  private baseOf(id: string, s: Stored, hops: number): Stored {
    const b = this.known.get(s.base as string);
    if (!b)
      throw new StoreError('not_found', `llm call ${id} is stored from call ${s.base}, which is missing`);
    if (hops >= MAX_DEPTH)
      throw new StoreError('invalid', `llm call ${id} is more than ${MAX_DEPTH} calls from one stored whole`);
    return b;
  }

  /** Copies the first `n` ids of the prompt then the response of `s` (call `id`) into `out`. */
  private fill(id: string, s: Stored, out: number[], n: number, hops = 0): void {
    const from = s.base === null ? 0 : (s.promptShared ?? 0);
    const prompt = from + s.own.length;
    if (n > prompt + s.response.length)
      throw new StoreError('invalid', `a call stored from llm call ${id} shares more ids than it has`);
    if (from > 0) this.fill(s.base as string, this.baseOf(id, s, hops), out, Math.min(n, from), hops + 1);
    for (let i = from; i < Math.min(n, prompt); i++) out[i] = s.own[i - from];
    for (let i = prompt; i < n; i++) out[i] = s.response[i - prompt];
  }

  private requestOf(id: string, s: Stored, hops = 0): string {
    if (s.wholeRequest === undefined) {
      const shared = s.requestShared;
      if (s.base === null || shared === null) s.wholeRequest = s.request;
      else {
        const base = this.requestOf(s.base, this.baseOf(id, s, hops), hops + 1);
        if (shared > base.length)
          throw new StoreError(
            'invalid',
            `llm call ${id} shares more of call ${s.base}'s request than it has`,
          );
        s.wholeRequest = base.slice(0, shared) + s.requestRest;
      }
    }
    return s.wholeRequest;
  }

  private backendOf(id: string, s: Stored, hops = 0): string | null {
    if (s.wholeBackend === undefined) {
      const shared = s.backendShared;
      if (shared === null) s.wholeBackend = s.backend;
      else {
        const from = s.backendFromBase
          ? this.backendOf(s.base as string, this.baseOf(id, s, hops), hops + 1)
          : this.requestOf(id, s, hops);
        if (from === null || shared > from.length)
          throw new StoreError(
            'invalid',
            `llm call ${id}'s backend request shares more than it was stored from`,
          );
        s.wholeBackend = from.slice(0, shared) + s.backendRest;
      }
    }
    return s.wholeBackend;
  }
}
