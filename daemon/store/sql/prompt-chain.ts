// An agent's calls repeat each other's tokens: call k's prompt is call k-1's prompt and answer plus
// what came since (a tool result, the next user turn). Stored whole, a rollout's prompt ids grow with
// the square of its turns. Here a call's prompt ids may be stored as the rest after an earlier call's
// tokens (its base): the row keeps `prompt_base` (that call's id) and `prompt_shared` (how many
// leading ids of the base's prompt ids, then its response ids, the prompt shares), and its prompt_ids
// blob holds only the ids after them. Reads rebuild the whole list; nothing outside the store sees a
// chain.
//
// Bases are calls this store committed, of the same rollout, attempt and recording (so a base is
// deleted with the calls that build on it), remembered in memory; a call with none (an attempt's
// first, after a restart, or another daemon's on a shared PostgreSQL) is stored whole, and so is every
// MAX_DEPTH-th call of a chain: reading one call alone takes at most MAX_DEPTH point reads more.
import type { LlmCall, NewLlmCall } from '../../protocol/entities';
import { decodeIds } from '../codec';
import type { Queryable, Row } from '../driver';
import { StoreError } from '../store';

type Ids = ArrayLike<number>;

/** Calls stored as the rest of a base, at most, between two stored whole. */
export const MAX_DEPTH = 16;
/** Fewer shared ids than this: stored whole (a chain link costs a read for little saved). */
const MIN_SHARED = 256;
/** Token ids the remembered bases may hold together (their arrays, 4–8 bytes an id). */
const BUDGET_IDS = 8_000_000;

interface Base {
  id: string;
  prompt: Ids;
  response: Ids;
  /** Links to the nearest call stored whole (0: this one is). */
  depth: number;
}

/** Where a call's prompt ids are stored from. */
export interface PromptLink {
  base: string;
  shared: number;
  depth: number;
}

/** The chain a call belongs to (null: a call with neither rollout nor recording has none). */
export function chainKey(
  call: Pick<NewLlmCall, 'rollout_id' | 'attempt_id' | 'recording_id'>,
): string | null {
  if (call.rollout_id == null && call.recording_id == null) return null;
  return `${call.rollout_id ?? ''}\n${call.attempt_id ?? ''}\n${call.recording_id ?? ''}`;
}

/** How many leading ids of `ids` equal `prompt` followed by `response`. */
function sharedPrefix(prompt: Ids, response: Ids, ids: Ids): number {
  const n = Math.min(ids.length, prompt.length + response.length);
  const inPrompt = Math.min(n, prompt.length);
  let i = 0;
  while (i < inPrompt && ids[i] === prompt[i]) i++;
  if (i < prompt.length) return i;
  while (i < n && ids[i] === response[i - prompt.length]) i++;
  return i;
}

/** The last committed call of each chain, least recently recorded first. */
export class PromptBases {
  private readonly bases = new Map<string, Base>();
  private held = 0;

  constructor(private readonly budgetIds = BUDGET_IDS) {}

  /** The base to store `ids` of the chain `key` from, or null to store them whole. */
  link(key: string | null, ids: Ids | null): PromptLink | null {
    if (key === null || ids === null) return null;
    const b = this.bases.get(key);
    if (!b || b.depth + 1 >= MAX_DEPTH) return null;
    const shared = sharedPrefix(b.prompt, b.response, ids);
    return shared >= MIN_SHARED ? { base: b.id, shared, depth: b.depth + 1 } : null;
  }

  /** After its commit: `call` (stored from `link`, or whole) is its chain's base from now on. */
  remember(key: string | null, call: LlmCall, link: PromptLink | null): void {
    if (key === null || call.prompt_ids === null) return;
    this.drop(key);
    const response = call.response_ids ?? [];
    this.bases.set(key, { id: call.id, prompt: call.prompt_ids, response, depth: link?.depth ?? 0 });
    this.held += call.prompt_ids.length + response.length;
    for (const [oldest] of this.bases) {
      if (this.held <= this.budgetIds) break;
      this.drop(oldest);
    }
  }

  private drop(key: string): void {
    const b = this.bases.get(key);
    if (!b) return;
    this.held -= b.prompt.length + b.response.length;
    this.bases.delete(key);
  }
}

interface Stored {
  /** The ids the row holds: all of its prompt, or the rest after `shared` ids of its base. */
  own: number[];
  response: number[];
  base: string | null;
  shared: number;
}

function storedOf(r: Row): Stored {
  return {
    own: r.prompt_ids == null ? [] : decodeIds(r.prompt_ids as Uint8Array),
    response: r.response_ids == null ? [] : decodeIds(r.response_ids as Uint8Array),
    base: r.prompt_base == null ? null : String(r.prompt_base),
    shared: Number(r.prompt_shared ?? 0),
  };
}

/** A call and the calls it is stored from, in one query (no further than a chain can reach). */
const CHAIN = `WITH RECURSIVE chain(id, prompt_base, prompt_shared, prompt_ids, response_ids, hops) AS (
  SELECT id, prompt_base, prompt_shared, prompt_ids, response_ids, 0 FROM llm_calls WHERE id = ?
  UNION ALL
  SELECT c.id, c.prompt_base, c.prompt_shared, c.prompt_ids, c.response_ids, chain.hops + 1
  FROM llm_calls c JOIN chain ON c.id = chain.prompt_base WHERE chain.hops < ${MAX_DEPTH}
) SELECT * FROM chain`;

/**
 * Gives each of `calls` (decoded from `rows`, in the same order) its whole prompt ids: its base's
 * shared ids, then its own. Bases among the rows are taken from them, the others read with their
 * chains. Each id is copied once, from the row that holds it.
 */
export async function rebuildPrompts(q: Queryable, rows: Row[], calls: LlmCall[]): Promise<void> {
  if (!rows.some((r) => r.prompt_base != null)) return;
  const known = new Map<string, Stored>();
  rows.forEach((r, i) => {
    known.set(calls[i].id, {
      own: calls[i].prompt_ids ?? [],
      response: calls[i].response_ids ?? [],
      base: r.prompt_base == null ? null : String(r.prompt_base),
      shared: Number(r.prompt_shared ?? 0),
    });
  });
  for (const s of [...known.values()]) {
    if (s.base === null || known.has(s.base)) continue;
    for (const r of await q.all(CHAIN, [s.base])) known.set(String(r.id), storedOf(r));
  }
  const baseOf = (id: string, s: Stored): Stored => {
    const b = known.get(s.base as string);
    if (!b)
      throw new StoreError('not_found', `llm call ${id} is stored from call ${s.base}, which is missing`);
    return b;
  };
  /** Copies the first `n` ids of the prompt then the response of `s` (call `id`) into `out`. */
  const fill = (id: string, s: Stored, out: number[], n: number, hops = 0): void => {
    const prompt = (s.base === null ? 0 : s.shared) + s.own.length;
    if (n > prompt + s.response.length)
      throw new StoreError('invalid', `a call stored from llm call ${id} shares more ids than it has`);
    if (hops > MAX_DEPTH)
      throw new StoreError('invalid', `llm call ${id} is more than ${MAX_DEPTH} calls from one stored whole`);
    const from = s.base === null ? 0 : s.shared;
    if (s.base !== null) fill(s.base, baseOf(id, s), out, Math.min(n, from), hops + 1);
    for (let i = from; i < Math.min(n, prompt); i++) out[i] = s.own[i - from];
    for (let i = prompt; i < n; i++) out[i] = s.response[i - prompt];
  };
  rows.forEach((r, i) => {
    if (r.prompt_base == null) return;
    const s = known.get(calls[i].id) as Stored;
    const ids = new Array<number>(s.shared + s.own.length);
    fill(calls[i].id, s, ids, ids.length);
    calls[i].prompt_ids = ids;
  });
}
