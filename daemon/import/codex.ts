// Codex's session log (~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl) as the calls it made.
// Each line is a RolloutLine `{timestamp, type, payload}` (codex-rs/protocol/src/protocol.rs): the
// session_meta first (id, cwd, cli_version, the base instructions), turn_context per turn (the model),
// response_item payloads that are OpenAI Responses items in history order (messages, reasoning,
// function calls and their outputs), compacted (the history replaced by a summary), event_msg and
// token usage records (a response's usage; its end). The items the model produced between two inputs
// are one response. Lines of rollouts before the RolloutLine envelope (2025) are the items themselves.
import { ResponsesRequest } from '../proxy/translate/responses';
import {
  type BadLine,
  isObject,
  jsonLines,
  msBetween,
  Notes,
  type ParsedSession,
  type SessionCall,
  str,
  titleOf,
} from './session';

type Item = Record<string, unknown>;

const OUTPUTS = new Set([
  'reasoning',
  'function_call',
  'custom_tool_call',
  'local_shell_call',
  'web_search_call',
]);
const INPUTS = new Set(['function_call_output', 'custom_tool_call_output']);
const IGNORED = new Set(['ghost_snapshot', 'compaction', 'other']);

/** A message's parts without media (noted); a string as one text part. */
function partsOf(content: unknown, role: string, notes: Notes): Item[] {
  if (typeof content === 'string')
    return [{ type: role === 'assistant' ? 'output_text' : 'input_text', text: content }];
  if (!Array.isArray(content)) return [];
  const out: Item[] = [];
  for (const p of content) {
    if (!isObject(p)) continue;
    if (p.type === 'input_text' || p.type === 'output_text')
      out.push({ type: p.type, text: String(p.text ?? '') });
    else if (p.type === 'refusal') out.push({ type: 'refusal', refusal: String(p.refusal ?? '') });
    else notes.add(`${String(p.type)} parts left out (the chat template takes text)`);
  }
  return out;
}

/**
 * An item as the Responses schema the proxy reads has it: free-form (custom) and local shell calls as
 * function calls, their outputs as function call outputs, media left out. null: not part of the
 * conversation the model saw (noted where it was).
 */
function normalize(item: Item, notes: Notes): Item | null {
  const t = String(item.type);
  if (t === 'message') {
    const role = String(item.role);
    return { type: 'message', role, content: partsOf(item.content, role, notes) };
  }
  if (t === 'reasoning')
    return {
      type: 'reasoning',
      summary: Array.isArray(item.summary) ? item.summary.filter(isObject) : [],
      ...(Array.isArray(item.content) ? { content: item.content.filter(isObject) } : {}),
    };
  if (t === 'function_call')
    return {
      type: 'function_call',
      call_id: str(item.call_id) ?? String(item.id),
      name: item.name,
      arguments: String(item.arguments ?? ''),
    };
  if (t === 'custom_tool_call')
    return {
      type: 'function_call',
      call_id: str(item.call_id) ?? String(item.id),
      name: item.name,
      arguments: JSON.stringify({ input: item.input ?? '' }),
    };
  if (t === 'local_shell_call')
    return {
      type: 'function_call',
      call_id: str(item.call_id) ?? String(item.id),
      name: 'local_shell',
      arguments: JSON.stringify(item.action ?? {}),
    };
  if (INPUTS.has(t)) {
    const out = item.output;
    const text =
      typeof out === 'string'
        ? out
        : isObject(out) && typeof out.content === 'string'
          ? out.content
          : JSON.stringify(out ?? '');
    return { type: 'function_call_output', call_id: String(item.call_id), output: text };
  }
  if (t === 'web_search_call') notes.add('web search calls left out (no function call to render)');
  else if (!IGNORED.has(t)) notes.add(`${t} items left out`);
  return null;
}

interface Pending {
  items: Item[];
  line: number;
  startedAt: string | null;
  lastAt: string | null;
  id: string | null;
  usage: SessionCall['usage'];
}

function usageOf(u: unknown): SessionCall['usage'] {
  if (!isObject(u)) return null;
  const n = (k: string) => (typeof u[k] === 'number' ? (u[k] as number) : 0);
  return { prompt_tokens: n('input_tokens'), completion_tokens: n('output_tokens') };
}

/** Reads a Codex rollout file's text (`file` names the session when its lines do not). */
export function readCodexSession(text: string, file: string): ParsedSession {
  const bad: BadLine[] = [];
  const notes = new Notes();
  const calls: SessionCall[] = [];
  let history: Item[] = [];
  let meta: Item = {};
  let model: string | null = null;
  let pending: Pending | null = null;
  let lastInputAt: string | null = null;
  let firstUser: string | null = null;
  const times: string[] = [];

  const flush = () => {
    if (!pending) return;
    const p = pending;
    pending = null;
    const request: Item = {
      model: model ?? 'unknown',
      ...(str(meta.instructions) ? { instructions: meta.instructions } : {}),
      input: structuredClone(history),
    };
    history.push(...p.items);
    if (!(request.input as Item[]).length) {
      bad.push({ line: p.line, error: 'a response with no input before it (nothing the model was asked)' });
      return;
    }
    const parsed = ResponsesRequest.safeParse(request);
    if (!parsed.success) {
      bad.push({
        line: p.line,
        error: `its request does not read as OpenAI Responses: ${parsed.error.issues[0]?.message}`,
      });
      return;
    }
    const calls_ = p.items.filter((i) => i.type === 'function_call').length;
    calls.push({
      wire_api: 'responses',
      request,
      response: { id: p.id, object: 'response', status: 'completed', model, output: p.items, usage: p.usage },
      model,
      finish_reason: calls_ ? 'tool_calls' : 'stop',
      usage: p.usage,
      started_at: p.startedAt,
      total_ms: msBetween(p.startedAt, p.lastAt),
      line: p.line,
    });
  };

  for (const { line, value: v } of jsonLines(text, bad)) {
    const at = str(v.timestamp);
    if (at) times.push(at);
    // before the RolloutLine envelope: the first line is the session meta, the others items
    const type =
      'payload' in v
        ? String(v.type)
        : v.record_type
          ? 'state'
          : 'type' in v
            ? 'response_item'
            : 'session_meta';
    const payload = 'payload' in v ? v.payload : v;
    if (!isObject(payload)) {
      bad.push({ line, error: `a ${type} line without a payload object` });
      continue;
    }
    if (type === 'session_meta') {
      const base = isObject(payload.base_instructions) ? payload.base_instructions.text : undefined;
      meta = { ...payload, instructions: str(payload.instructions) ?? str(base) };
      continue;
    }
    if (type === 'turn_context') {
      model = str(payload.model) ?? model;
      continue;
    }
    if (type === 'compacted') {
      flush();
      const replaced = Array.isArray(payload.replacement_history) ? payload.replacement_history : null;
      history = replaced
        ? replaced.filter(isObject).flatMap((i): Item[] => {
            const n = normalize(i, notes);
            return n ? [n] : [];
          })
        : [
            {
              type: 'message',
              role: 'user',
              content: [{ type: 'input_text', text: String(payload.message ?? '') }],
            },
          ];
      continue;
    }
    if (type === 'token_usage_record' || (type === 'event_msg' && payload.type === 'token_count')) {
      if (pending) {
        const info = isObject(payload.info) ? payload.info : {};
        pending.usage = usageOf(payload.usage ?? info.last_token_usage) ?? pending.usage;
        pending.id = str(payload.response_id) ?? pending.id;
        if (type === 'token_usage_record') flush();
      }
      continue;
    }
    if (type !== 'response_item') continue;
    const t = String(payload.type);
    const output = OUTPUTS.has(t) || (t === 'message' && payload.role === 'assistant');
    const item = normalize(payload, notes);
    if (!output) {
      flush();
      if (item) history.push(item);
      lastInputAt = at ?? lastInputAt;
      if (t === 'message' && payload.role === 'user' && item)
        firstUser ??=
          (item.content as Item[]).map((p) => String(p.text ?? '')).find((s) => titleOf(s)) ?? null;
      continue;
    }
    if (!item) continue;
    pending ??= { items: [], line, startedAt: lastInputAt, lastAt: at, id: null, usage: null };
    pending.items.push(item);
    pending.lastAt = at ?? pending.lastAt;
  }
  flush();
  const sessionId = str(meta.id) ?? /([0-9a-f]{8}-[0-9a-f-]{27})\.jsonl$/.exec(file)?.[1] ?? file;
  return {
    source: 'codex',
    session_id: sessionId,
    cwd: str(meta.cwd),
    title: firstUser ? titleOf(firstUser) : null,
    cli_version: str(meta.cli_version),
    started_at: str(meta.timestamp) ?? times[0] ?? null,
    ended_at: times.at(-1) ?? null,
    calls,
    bad_lines: bad,
    notes: notes.list(),
  };
}
