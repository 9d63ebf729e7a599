// Codex's session log (~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl) as the calls it made.
// Each line is a RolloutLine `{timestamp, type, payload}` (codex-rs/protocol/src/protocol.rs): the
// session_meta first (id, cwd, cli_version, the base instructions), turn_context per turn (the model),
// response_item payloads that are OpenAI Responses items in history order (messages, reasoning,
// function calls and their outputs), compacted (the history replaced by a summary), event_msg and
// token usage records (a response's usage; its end). The items the model produced between two inputs
// are one response. Lines of rollouts before the RolloutLine envelope (2025) are the items themselves.
import {
  type BadLine,
  type Entry,
  isObject,
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

/** The kind of a line and its payload (before the RolloutLine envelope: meta first, then the items). */
function kindOf(v: Item): { type: string; payload: unknown } {
  if ('payload' in v) return { type: String(v.type), payload: v.payload };
  const type = v.record_type ? 'state' : 'type' in v ? 'response_item' : 'session_meta';
  return { type, payload: v };
}

/** One rollout read line by line: the history so far, the response being read, the calls made. */
class CodexReader {
  readonly notes = new Notes();
  readonly calls: SessionCall[] = [];
  readonly times: string[] = [];
  meta: Item = {};
  firstUser: string | null = null;
  private history: Item[] = [];
  private model: string | null = null;
  private pending: Pending | null = null;
  private lastInputAt: string | null = null;

  constructor(readonly bad: BadLine[]) {}

  line(line: number, v: Item): void {
    const at = str(v.timestamp);
    if (at) this.times.push(at);
    const { type, payload } = kindOf(v);
    if (!isObject(payload)) {
      this.bad.push({ line, error: `a ${type} line without a payload object` });
      return;
    }
    if (type === 'session_meta') {
      const base = isObject(payload.base_instructions) ? payload.base_instructions.text : undefined;
      this.meta = { ...payload, instructions: str(payload.instructions) ?? str(base) };
    } else if (type === 'turn_context') this.model = str(payload.model) ?? this.model;
    else if (type === 'compacted') this.compacted(payload);
    else if (type === 'token_usage_record' || (type === 'event_msg' && payload.type === 'token_count'))
      this.usage(payload, type === 'token_usage_record');
    else if (type === 'response_item') this.item(line, at, payload);
  }

  /** The history replaced by the compaction's (or by its summary as a user message). */
  private compacted(payload: Item): void {
    this.flush();
    const replaced = Array.isArray(payload.replacement_history) ? payload.replacement_history : null;
    this.history = replaced
      ? replaced.filter(isObject).flatMap((i): Item[] => {
          const n = normalize(i, this.notes);
          return n ? [n] : [];
        })
      : [
          {
            type: 'message',
            role: 'user',
            content: [{ type: 'input_text', text: String(payload.message ?? '') }],
          },
        ];
  }

  /** A response's usage (and id); a usage record also ends it. */
  private usage(payload: Item, ends: boolean): void {
    if (!this.pending) return;
    const info = isObject(payload.info) ? payload.info : {};
    this.pending.usage = usageOf(payload.usage ?? info.last_token_usage) ?? this.pending.usage;
    this.pending.id = str(payload.response_id) ?? this.pending.id;
    if (ends) this.flush();
  }

  /** An input item ends the response being read and joins the history; an output item joins the response. */
  private item(line: number, at: string | null, payload: Item): void {
    const t = String(payload.type);
    const output = OUTPUTS.has(t) || (t === 'message' && payload.role === 'assistant');
    const item = normalize(payload, this.notes);
    if (!output) {
      this.flush();
      if (item) this.history.push(item);
      this.lastInputAt = at ?? this.lastInputAt;
      if (t === 'message' && payload.role === 'user' && item)
        this.firstUser ??=
          (item.content as Item[]).map((p) => String(p.text ?? '')).find((s) => titleOf(s)) ?? null;
      return;
    }
    if (!item) return;
    this.pending ??= { items: [], line, startedAt: this.lastInputAt, lastAt: at, id: null, usage: null };
    this.pending.items.push(item);
    this.pending.lastAt = at ?? this.pending.lastAt;
  }

  /** The response read so far as a call: the history before it is its request. */
  flush(): void {
    const p = this.pending;
    if (!p) return;
    this.pending = null;
    const request: Item = {
      model: this.model ?? 'unknown',
      ...(str(this.meta.instructions) ? { instructions: this.meta.instructions } : {}),
      // history items are never edited once pushed: a copy of the list is the request's own
      input: this.history.slice(),
    };
    this.history.push(...p.items);
    if (!(request.input as Item[]).length) {
      this.bad.push({
        line: p.line,
        error: 'a response with no input before it (nothing the model was asked)',
      });
      return;
    }
    const model = this.model;
    this.calls.push({
      wire_api: 'responses',
      request,
      response: { id: p.id, object: 'response', status: 'completed', model, output: p.items, usage: p.usage },
      model,
      finish_reason: p.items.some((i) => i.type === 'function_call') ? 'tool_calls' : 'stop',
      usage: p.usage,
      started_at: p.startedAt,
      total_ms: msBetween(p.startedAt, p.lastAt),
      line: p.line,
    });
  }
}

/** Reads a Codex rollout file's lines (`file` names the session when its lines do not). */
export function readCodexSession(entries: Entry[], bad: BadLine[], file: string): ParsedSession {
  const r = new CodexReader(bad);
  for (const { line, value } of entries) r.line(line, value);
  r.flush();
  return {
    source: 'codex',
    session_id: str(r.meta.id) ?? /([0-9a-f]{8}-[0-9a-f-]{27})\.jsonl(\.zst)?$/.exec(file)?.[1] ?? file,
    cwd: str(r.meta.cwd),
    title: r.firstUser ? titleOf(r.firstUser) : null,
    cli_version: str(r.meta.cli_version),
    started_at: str(r.meta.timestamp) ?? r.times[0] ?? null,
    ended_at: r.times.at(-1) ?? null,
    calls: r.calls,
    bad_lines: r.bad,
    notes: r.notes.list(),
  };
}
