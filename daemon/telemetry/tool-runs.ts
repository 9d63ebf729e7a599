// Which OTLP spans and log records are tool executions, and what the trajectory keeps of each (pure).
// Spans: the GenAI semantic conventions' `execute_tool` operation (`gen_ai.tool.name`; Claude Code's
// `claude_code.tool` spans carry it too) and OpenInference's TOOL spans (`tool.name`). Log records:
// the events coding-agent CLIs emit when a tool finishes — Claude Code's `claude_code.tool_result`
// (`event.name` = tool_result: tool_name, tool_use_id, success, duration_ms, tool_result_size_bytes),
// Codex's `codex.tool_result` (tool_name, call_id, duration_ms, success, output / output_length), and
// Gemini CLI's and Qwen Code's `*.tool_call` (function_name, duration_ms, success). A log event is
// emitted when the tool ends, so its start is its time less its duration.
import type { NewToolRun } from '../protocol/entities';
import type {
  OtlpAnyValue,
  OtlpKeyValue,
  OtlpLogRecord,
  OtlpLogsRequest,
  OtlpSpan,
  OtlpTracesRequest,
} from '../protocol/otlp';

/** A kept attribute's text is cut at this many characters; a run keeps at most MAX_ATTRIBUTES of them. */
const MAX_VALUE_CHARS = 2000;
const MAX_ATTRIBUTES = 64;
/** Who the user is stays out of the trajectory (CLIs stamp it on every event). */
const IDENTITY = new Set([
  'user.email',
  'user.account_uuid',
  'user.account_id',
  'user.id',
  'organization.id',
]);

function plain(v: OtlpAnyValue | undefined, depth = 0): unknown {
  if (!v || depth > 8) return null;
  if (v.stringValue !== undefined) return v.stringValue;
  if (v.boolValue !== undefined) return v.boolValue;
  if (v.intValue !== undefined) {
    const n = Number(v.intValue);
    return Number.isSafeInteger(n) ? n : String(v.intValue);
  }
  if (v.doubleValue !== undefined) return Number(v.doubleValue);
  if (v.arrayValue) return (v.arrayValue.values ?? []).map((x) => plain(x, depth + 1));
  if (v.kvlistValue) return attributesOf(v.kvlistValue.values, depth + 1);
  if (v.bytesValue !== undefined) return v.bytesValue;
  return null;
}

export function attributesOf(kvs: OtlpKeyValue[] | undefined, depth = 0): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const kv of kvs ?? []) out[kv.key] = plain(kv.value, depth);
  return out;
}

const text = (v: unknown): string | null =>
  typeof v === 'string' && v !== '' ? v : typeof v === 'number' ? String(v) : null;
function count(v: unknown): number | null {
  const n = typeof v === 'number' ? v : typeof v === 'string' && v.trim() !== '' ? Number(v) : Number.NaN;
  return Number.isFinite(n) && n >= 0 ? n : null;
}
function bool(v: unknown): boolean | null {
  if (typeof v === 'boolean') return v;
  if (v === 'true' || v === 'True' || v === 1) return true;
  if (v === 'false' || v === 'False' || v === 0) return false;
  return null;
}
const first = <T>(...xs: (T | null)[]): T | null => xs.find((x) => x !== null) ?? null;

/** ms since the epoch of an OTLP nanosecond time; null when absent or zero. */
function msOf(nanos: string | number | undefined): number | null {
  if (nanos === undefined) return null;
  const ms = Number(BigInt(nanos) / 1_000_000n);
  return ms > 0 ? ms : null;
}

/** The attributes kept beside the extracted fields: no identity, long texts cut, at most MAX_ATTRIBUTES. */
function kept(attrs: Record<string, unknown>, used: Set<string>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  let n = 0;
  for (const [k, v] of Object.entries(attrs)) {
    if (used.has(k) || IDENTITY.has(k)) continue;
    if (n++ >= MAX_ATTRIBUTES) break;
    const t = typeof v === 'string' ? v : v !== null && typeof v === 'object' ? JSON.stringify(v) : v;
    out[k] =
      typeof t === 'string' && t.length > MAX_VALUE_CHARS
        ? `${t.slice(0, MAX_VALUE_CHARS)}… (${t.length - MAX_VALUE_CHARS} more characters)`
        : typeof v === 'object'
          ? v
          : t;
  }
  return out;
}

const byteLength = (v: unknown) => (typeof v === 'string' ? Buffer.byteLength(v) : null);
const resultBytes = (a: Record<string, unknown>) =>
  first(
    count(a.tool_result_size_bytes),
    count(a.output_length),
    count(a.content_length),
    byteLength(a['gen_ai.tool.call.result']),
    byteLength(a['output.value']),
    byteLength(a.output),
  );
const callIdOf = (a: Record<string, unknown>) =>
  first(text(a['gen_ai.tool.call.id']), text(a.tool_use_id), text(a.call_id), text(a.callId));

const SPAN_USED = new Set([
  'gen_ai.operation.name',
  'gen_ai.tool.name',
  'tool.name',
  'tool_name',
  'openinference.span.kind',
  'gen_ai.tool.call.id',
  'tool_use_id',
  'call_id',
  'success',
  'tool_result_size_bytes',
  'output_length',
]);

function spanRun(span: OtlpSpan, agent: string | null): NewToolRun | null {
  const a = attributesOf(span.attributes);
  const genAi = a['gen_ai.operation.name'] === 'execute_tool';
  const openInference = a['openinference.span.kind'] === 'TOOL';
  if (!genAi && !openInference) return null;
  const start = msOf(span.startTimeUnixNano);
  if (start === null) return null;
  const end = msOf(span.endTimeUnixNano);
  const failed = span.status?.code === 2;
  return {
    tool:
      first(text(a['gen_ai.tool.name']), text(a['tool.name']), text(a.tool_name)) ?? (span.name || 'tool'),
    call_id: callIdOf(a),
    started_at: new Date(start).toISOString(),
    duration_ms: end !== null && end >= start ? end - start : null,
    success: bool(a.success) ?? !failed,
    result_bytes: resultBytes(a),
    error: failed ? (span.status?.message ?? text(a['error.type']) ?? 'error') : null,
    source: span.name || 'span',
    agent,
    attributes: kept(a, SPAN_USED),
  };
}

/** The tool runs among a traces request's spans. */
export function toolRunsFromSpans(req: OtlpTracesRequest): NewToolRun[] {
  const out: NewToolRun[] = [];
  for (const rs of req.resourceSpans ?? []) {
    const agent = text(attributesOf(rs.resource?.attributes)['service.name']);
    for (const ss of rs.scopeSpans ?? [])
      for (const span of ss.spans ?? []) {
        const run = spanRun(span, agent);
        if (run) out.push(run);
      }
  }
  return out;
}

const LOG_USED = new Set([
  'event.name',
  'event.timestamp',
  'tool_name',
  'function_name',
  'gen_ai.tool.name',
  'tool_use_id',
  'call_id',
  'duration_ms',
  'success',
  'error',
  'tool_result_size_bytes',
  'output_length',
  'content_length',
]);

/** The event's name: `event.name`, the record's event_name, or its body (Claude Code: `claude_code.tool_result`). */
function eventName(log: OtlpLogRecord, a: Record<string, unknown>): string | null {
  const body = text(plain(log.body));
  const named = text(a['event.name']) ?? text(log.eventName);
  // Claude Code names the event `tool_result` and puts `claude_code.tool_result` in the body
  if (named && !named.includes('.') && body?.endsWith(`.${named}`)) return body;
  return named ?? body;
}
const TOOL_EVENT = /(^|\.)(tool_result|tool_call)$/;

function logRun(log: OtlpLogRecord, agent: string | null): NewToolRun | null {
  const a = attributesOf(log.attributes);
  const name = eventName(log, a);
  if (!name || !TOOL_EVENT.test(name)) return null;
  const tool = first(text(a.tool_name), text(a.function_name), text(a['gen_ai.tool.name']));
  if (!tool) return null;
  const stamped = typeof a['event.timestamp'] === 'string' ? Date.parse(a['event.timestamp']) : Number.NaN;
  const end = Number.isFinite(stamped) ? stamped : (msOf(log.timeUnixNano) ?? msOf(log.observedTimeUnixNano));
  if (end === null) return null;
  const duration = count(a.duration_ms);
  const success = bool(a.success);
  return {
    tool,
    call_id: callIdOf(a),
    started_at: new Date(end - (duration ?? 0)).toISOString(),
    duration_ms: duration,
    success,
    result_bytes: resultBytes(a),
    error: success === false ? first(text(a.error), text(a.error_type), text(a.output)) : null,
    source: name,
    agent,
    attributes: kept(a, LOG_USED),
  };
}

/** The tool runs among a logs request's records. */
export function toolRunsFromLogs(req: OtlpLogsRequest): NewToolRun[] {
  const out: NewToolRun[] = [];
  for (const rl of req.resourceLogs ?? []) {
    const agent = text(attributesOf(rl.resource?.attributes)['service.name']);
    for (const sl of rl.scopeLogs ?? [])
      for (const log of sl.logRecords ?? []) {
        const run = logRun(log, agent);
        if (run) out.push(run);
      }
  }
  return out;
}
