// LLM calls, recorded token-exactly (ids and logprobs as packed blobs, see ../codec.ts; what repeats an
// earlier call, its prompt ids and request text, as the rest after it, see call-chain.ts).
import { type LlmCall, LlmCallStatus, type NewLlmCall } from '../../protocol/entities';
import type { LlmCallSummary } from '../../protocol/events';
import { decodeIdsOrNull, decodeLogprobs, encodeIds, encodeLogprobs } from '../codec';
import type { Param, Queryable, Row } from '../driver';
import { newId } from '../ids';
import { jsonText, plainValue } from '../json-text';
import { bodiesNeedRedaction, redactBodies, redactFields } from '../redact-call';
import { StoreError } from '../store';
import {
  type ChainedColumns,
  type ChainLink,
  chainedColumns,
  chainKey,
  rebuildChains,
  type Whole,
} from './call-chain';
import type { SqlContext } from './context';
import { invalid, iso, json, notFound, now, num, numOrNull, oneOf, parse, str } from './values';

const CALL_COLUMNS = [
  'id',
  'rollout_id',
  'attempt_id',
  'recording_id',
  'seq',
  'wire_api',
  'stream',
  'request',
  'backend_request',
  'response',
  'prompt_ids',
  'response_ids',
  'response_logprobs',
  'token_source',
  'bridge',
  'finish_reason',
  'usage',
  'model',
  'model_version',
  'backend',
  'status',
  'error',
  'http_status',
  'tags',
  'queue_ms',
  'ttft_ms',
  'total_ms',
  'created_at',
  'base_call',
  'prompt_shared',
  'request_shared',
  'request_rest',
  'backend_shared',
  'backend_rest',
  'backend_from_base',
  'sampling',
] as const;
const CALL_COLS = CALL_COLUMNS.join(', ');

/** A call's bodies and token arrays as written. */
interface Encoded {
  link: ChainLink | null;
  texts: ChainedColumns;
  response: string | null;
  promptIds: Buffer | null;
  responseIds: Buffer | null;
  logprobs: Buffer | null;
}

function toCall(r: Row, whole: Whole | null, prompt: number[] | null, response: number[] | null): LlmCall {
  return {
    id: String(r.id),
    rollout_id: str(r.rollout_id),
    attempt_id: str(r.attempt_id),
    recording_id: str(r.recording_id),
    seq: num(r.seq),
    wire_api: r.wire_api as LlmCall['wire_api'],
    stream: Boolean(num(r.stream)),
    request: parse(whole?.request ?? r.request),
    backend_request: parse(whole?.backend ?? r.backend_request),
    response: parse(r.response),
    prompt_ids: whole?.prompt ?? prompt,
    response_ids: response,
    response_logprobs: r.response_logprobs == null ? null : decodeLogprobs(r.response_logprobs as Uint8Array),
    token_source: r.token_source as LlmCall['token_source'],
    bridge: parse(r.bridge),
    sampling: parse(r.sampling) as LlmCall['sampling'],
    finish_reason: str(r.finish_reason),
    usage: parse(r.usage) as LlmCall['usage'],
    model: str(r.model),
    model_version: numOrNull(r.model_version),
    backend: str(r.backend),
    status: r.status as LlmCall['status'],
    error: str(r.error),
    http_status: numOrNull(r.http_status),
    tags: (parse(r.tags) as string[] | null) ?? [],
    queue_ms: numOrNull(r.queue_ms),
    ttft_ms: numOrNull(r.ttft_ms),
    total_ms: numOrNull(r.total_ms),
    created_at: iso(r.created_at),
  };
}

/** An imported call's own time (ISO, normalized); null: none given, or not a time. */
function importedAt(v: unknown): string | null {
  if (typeof v !== 'string') return null;
  const ms = Date.parse(v);
  return Number.isFinite(ms) ? new Date(ms).toISOString() : null;
}

const textsOf = (call: NewLlmCall) => ({
  request: jsonText(call.request) ?? 'null',
  backend: jsonText(call.backend_request),
});

/** The live-event form of a call: no bodies or token arrays, only their lengths. */
export function summarizeCall(call: LlmCall): LlmCallSummary {
  const {
    request: _request,
    backend_request: _backendRequest,
    response: _response,
    prompt_ids,
    response_ids,
    response_logprobs: _logprobs,
    ...rest
  } = call;
  // Not `{...rest, …}`: V8 (Node 20) adds each property after a spread through a runtime call (12 µs
  // per call here, against 4 µs).
  return Object.assign(rest, {
    prompt_tokens: prompt_ids?.length ?? null,
    response_tokens: response_ids?.length ?? null,
  });
}

export async function recordLlmCall(c: SqlContext, call: NewLlmCall): Promise<LlmCall> {
  return (await recordLlmCalls(c, [call]))[0];
}

/**
 * Calls get consecutive `seq` numbers within their rollout (concurrent writers of one rollout are
 * serialized by its row lock), or 0 without one. A call with only a recording_id joins the
 * recording's rollout.
 */
export async function recordLlmCalls(c: SqlContext, input: NewLlmCall[]): Promise<LlmCall[]> {
  if (input.length === 0) return [];
  const t = now();
  input.forEach((c, i) => {
    if (!c || typeof c !== 'object') invalid(`calls[${i}]`, 'a call must be an object');
  });
  // Redacted first (see ../redact-call.ts): the chain's bases, the rows and the events hold only
  // redacted text. Bodies whose text is known (JsonText) are written as that text.
  const keys = input.map(chainKey);
  const texts: { request: string; backend: string | null }[] = [];
  const links: (ChainLink | null)[] = [];
  const calls = input.map((raw, i) => {
    try {
      let call = redactFields(raw);
      let text = textsOf(call);
      let shared = c.chains.compare(keys[i], call.prompt_ids, text.request, text.backend);
      if (bodiesNeedRedaction(call, text, shared)) {
        call = redactBodies(call);
        text = textsOf(call);
        shared = c.chains.compare(keys[i], call.prompt_ids, text.request, text.backend);
      }
      texts.push(text);
      links.push(c.chains.linkOf(shared));
      return call;
    } catch (err) {
      return invalid(`calls[${i}]`, (err as Error).message);
    }
  });
  const out: LlmCall[] = calls.map((c) => {
    oneOf('wire_api', c.wire_api, ['chat', 'completions', 'responses', 'messages', 'gemini']);
    oneOf('token_source', c.token_source, ['backend', 'bridge', 'text', 'import']);
    oneOf('status', c.status, LlmCallStatus.options);
    return {
      id: newId('call'),
      rollout_id: c.rollout_id ?? null,
      attempt_id: c.attempt_id ?? null,
      recording_id: c.recording_id ?? null,
      seq: 0,
      wire_api: c.wire_api,
      stream: Boolean(c.stream),
      request: plainValue(c.request) ?? null,
      backend_request: plainValue(c.backend_request) ?? null,
      response: plainValue(c.response) ?? null,
      prompt_ids: c.prompt_ids ?? null,
      response_ids: c.response_ids ?? null,
      response_logprobs: c.response_logprobs ?? null,
      token_source: c.token_source,
      bridge: c.bridge ?? null,
      sampling: c.sampling ?? null,
      finish_reason: c.finish_reason ?? null,
      usage: c.usage ?? null,
      model: c.model ?? null,
      model_version: c.model_version ?? null,
      backend: c.backend ?? null,
      status: c.status,
      error: c.error ?? null,
      http_status: c.http_status ?? null,
      tags: c.tags ?? [],
      queue_ms: c.queue_ms ?? null,
      ttft_ms: c.ttft_ms ?? null,
      total_ms: c.total_ms ?? null,
      created_at: importedAt(c.created_at) ?? t,
    };
  });
  // Encode outside the transaction (it is the bulk of the CPU work).
  const encoded = calls.map((call, i): Encoded => {
    try {
      const { request, backend } = texts[i];
      const link = links[i];
      return {
        link,
        texts: chainedColumns(link, request, backend),
        response: jsonText(call.response),
        promptIds: call.prompt_ids ? encodeIds(call.prompt_ids, link?.promptShared ?? 0) : null,
        responseIds: call.response_ids ? encodeIds(call.response_ids) : null,
        logprobs: call.response_logprobs ? encodeLogprobs(call.response_logprobs) : null,
      };
    } catch (err) {
      return invalid(`calls[${i}]`, (err as Error).message);
    }
  });
  // PostgreSQL: one round trip. SQLite (exclusive write transactions, no round trips), a batch too
  // big for one query and one that names an unknown row take the transaction below.
  const stored =
    c.db.dialect === 'postgres' && out.length <= MAX_SCRIPT_ROWS && (await insertInOneTrip(c, out, encoded))
      ? out
      : await insertInTransaction(c, out, encoded);
  for (const [i, call] of stored.entries()) c.chains.remember(keys[i], call, texts[i], encoded[i].link);
  return stored;
}

async function insertInTransaction(c: SqlContext, out: LlmCall[], encoded: Encoded[]): Promise<LlmCall[]> {
  return c.tx(async (q, emit) => {
    await joinRecordings(q, out);
    const perRollout = new Map<string, LlmCall[]>();
    for (const c of out) {
      if (c.rollout_id === null) continue;
      const list = perRollout.get(c.rollout_id);
      if (list) list.push(c);
      else perRollout.set(c.rollout_id, [c]);
    }
    // Rollouts locked in one order by every writer: two batches cannot wait on each other.
    for (const [rolloutId, list] of [...perRollout].sort((x, y) => byId(x[0], y[0]))) {
      // The row lock (PostgreSQL) serializes writers of one rollout; SQLite write transactions are
      // exclusive anyway. The last seq comes from the (rollout_id, seq) index; no page is written.
      const locked = await q.get(`SELECT id FROM rollouts WHERE id = ?${c.db.forUpdate}`, [rolloutId]);
      if (!locked) notFound('rollout_id', 'rollout', rolloutId);
      // ORDER BY … LIMIT 1 is one index seek in both databases (SQLite's MAX() here scans the range).
      const last = await q.get<{ seq: number }>(LAST_SEQ, [rolloutId]);
      const first = last === undefined ? 0 : Number(last.seq) + 1;
      list.forEach((c, i) => {
        c.seq = first + i;
      });
    }
    await q.insertMany(
      'llm_calls',
      CALL_COLUMNS,
      out.map((call, i) => callRow(call, encoded[i])),
    );
    if (c.listeningTo('llm_call'))
      for (const call of out) emit({ type: 'llm_call', call: summarizeCall(call) });
    return out;
  });
}

const LAST_SEQ = 'SELECT seq FROM llm_calls WHERE rollout_id = ? ORDER BY seq DESC LIMIT 1';
/** Calls per one-trip insert: a query of a few MB at most, for batches of agent-sized calls. */
const MAX_SCRIPT_ROWS = 256;
const SEQ_AT = CALL_COLUMNS.indexOf('seq');
const byId = (x: string, y: string) => (x < y ? -1 : x > y ? 1 : 0);

/** Recording-only calls join their recording's rollout (which never changes). */
async function joinRecordings(q: Queryable, out: LlmCall[]): Promise<void> {
  for (const c of out) {
    if (c.rollout_id === null && c.recording_id !== null) {
      const rec = await q.get<{ rollout_id: string }>('SELECT rollout_id FROM recordings WHERE id = ?', [
        c.recording_id,
      ]);
      if (!rec) notFound('recording_id', 'recording', c.recording_id);
      c.rollout_id = String(rec.rollout_id);
    }
  }
}

function callRow(c: LlmCall, e: Encoded): Param[] {
  return [
    c.id,
    c.rollout_id,
    c.attempt_id,
    c.recording_id,
    c.seq,
    c.wire_api,
    c.stream ? 1 : 0,
    e.texts.request,
    e.texts.backend,
    e.response,
    e.promptIds,
    e.responseIds,
    e.logprobs,
    c.token_source,
    json(c.bridge),
    c.finish_reason,
    json(c.usage),
    c.model,
    c.model_version,
    c.backend,
    c.status,
    c.error,
    c.http_status,
    JSON.stringify(c.tags),
    c.queue_ms,
    c.ttft_ms,
    c.total_ms,
    c.created_at,
    e.link?.base ?? null,
    e.link?.promptShared ?? null,
    e.texts.requestShared,
    e.texts.requestRest,
    e.texts.backendShared,
    e.texts.backendRest,
    e.texts.backendFromBase ? 1 : null,
    json(c.sampling),
  ];
}

/** The seq slot of a call whose number is read in the INSERT: its rollout's last seq (+1, or 0) + k. */
const SEQ_IN_INSERT = `COALESCE((${LAST_SEQ}) + 1, 0) + ?`;
const ROW_IN_INSERT = `(${CALL_COLUMNS.map((col) => (col === 'seq' ? SEQ_IN_INSERT : '?')).join(', ')})`;

/**
 * PostgreSQL: the calls in one round trip instead of five (begin, lock the rollout, its last seq,
 * insert, commit): a script that locks the rollouts' rows (in id order, as the transaction does) and
 * then inserts the calls, each numbered in the INSERT from its rollout's last seq. The INSERT reads
 * with a snapshot taken after the locks were granted, so it sees every call committed by a writer it
 * waited for. False when the script was refused for an unknown rollout, recording or other
 * reference, which the transaction reports by field.
 */
async function insertInOneTrip(c: SqlContext, out: LlmCall[], encoded: Encoded[]): Promise<boolean> {
  const rows = await c.read(async () => {
    try {
      await joinRecordings(c.db, out);
      const place = new Map<string, number>();
      const params: Param[] = [];
      out.forEach((call, i) => {
        let k = 0;
        if (call.rollout_id !== null) {
          k = place.get(call.rollout_id) ?? 0;
          place.set(call.rollout_id, k + 1);
        }
        const row = callRow(call, encoded[i]);
        params.push(...row.slice(0, SEQ_AT), call.rollout_id, k, ...row.slice(SEQ_AT + 1));
      });
      const rollouts = [...place.keys()].sort(byId);
      const script = [
        {
          sql: `INSERT INTO llm_calls (${CALL_COLS}) VALUES ${out.map(() => ROW_IN_INSERT).join(', ')} RETURNING id, seq`,
          params,
        },
      ];
      if (rollouts.length > 0)
        script.unshift({
          sql: `SELECT id FROM rollouts WHERE id IN (${rollouts.map(() => '?').join(', ')}) ORDER BY id${c.db.forUpdate}`,
          params: rollouts,
        });
      return await c.db.script<{ id: string; seq: number }>(script);
    } catch (err) {
      if ((err as { code?: unknown }).code === '23503' || err instanceof StoreError) return null;
      throw err;
    }
  });
  if (rows === null) return false;
  const seqOf = new Map(rows.map((r) => [r.id, Number(r.seq)]));
  for (const call of out) call.seq = seqOf.get(call.id) ?? call.seq;
  if (c.listeningTo('llm_call'))
    c.publish(out.map((call) => ({ type: 'llm_call', call: summarizeCall(call) })));
  return true;
}

/** Rows as calls, each with its whole bodies and prompt ids. */
async function callsOf(q: Queryable, rows: Row[]): Promise<LlmCall[]> {
  const decoded = rows.map((r) => ({
    prompt: decodeIdsOrNull(r.prompt_ids),
    response: decodeIdsOrNull(r.response_ids),
  }));
  const wholes = await rebuildChains(q, rows, decoded);
  return rows.map((r, i) => toCall(r, wholes[i], decoded[i].prompt, decoded[i].response));
}

export async function getLlmCall(c: SqlContext, id: string): Promise<LlmCall | null> {
  return c.read(async () => {
    const row = await c.db.get(`SELECT ${CALL_COLS} FROM llm_calls WHERE id = ?`, [id]);
    return row ? (await callsOf(c.db, [row]))[0] : null;
  });
}

export async function listLlmCalls(c: SqlContext, rolloutId: string): Promise<LlmCall[]> {
  return c.read(async () => {
    await c.mustExist(c.db, 'rollouts', rolloutId, 'rollout_id', 'rollout');
    const rows = await c.db.all(`SELECT ${CALL_COLS} FROM llm_calls WHERE rollout_id = ? ORDER BY seq, id`, [
      rolloutId,
    ]);
    return callsOf(c.db, rows);
  });
}

export async function listRecordingCalls(c: SqlContext, recordingId: string): Promise<LlmCall[]> {
  return c.read(async () => {
    await c.mustExist(c.db, 'recordings', recordingId, 'recording_id', 'recording');
    const rows = await c.db.all(
      `SELECT ${CALL_COLS} FROM llm_calls WHERE recording_id = ? ORDER BY seq, id`,
      [recordingId],
    );
    return callsOf(c.db, rows);
  });
}
