// Claude Code's session log (~/.claude/projects/<project>/<session>.jsonl) as the calls it made. Each
// `user`/`assistant` line wraps an Anthropic Messages message; lines link by parentUuid → uuid (a
// rewind or edit forks the chain: the branch that ends at the last line is the session). An answer
// streamed in several lines (one per content block, older CLIs) shares its message.id and is one call.
// `attachment` lines carry the reminders the model was shown (`rendered`, as user or system text), and
// newer CLIs (2.1.3xx) write the system prompt and tools (`api-request-shape`, `prompt_snapshot`) and
// each request's parameters (`api-request`, which an answer's requestRef names). A compact boundary
// starts the history anew (the model saw the summary, not what came before).
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

type Block = Record<string, unknown>;
type Message = { role: 'user' | 'assistant' | 'system'; content: Block[] };

const MEDIA = new Set(['image', 'document']);

/** What the CLI wrote besides the conversation: request shapes, request parameters, titles. */
interface Context {
  shapes: Map<string, { system?: unknown; tools?: unknown }>;
  requests: Map<string, { shapeHash: string | null; timestamp: string | null; maxTokens: number | null }>;
  byUuid: Map<string, Entry>;
  title: string | null;
}

function collect(entries: Entry[]): Context {
  const ctx: Context = { shapes: new Map(), requests: new Map(), byUuid: new Map(), title: null };
  let summary: string | null = null;
  for (const e of entries) {
    const v = e.value;
    const uuid = str(v.uuid);
    if (uuid && ['user', 'assistant', 'attachment', 'system'].includes(String(v.type)))
      ctx.byUuid.set(uuid, e);
    if (v.type === 'api-request-shape' && str(v.shapeHash) && isObject(v.shape))
      ctx.shapes.set(String(v.shapeHash), v.shape);
    if (v.type === 'api-request' && str(v.id)) {
      const params = isObject(v.params) ? v.params : {};
      ctx.requests.set(String(v.id), {
        shapeHash: str(v.shapeHash),
        timestamp: str(v.timestamp),
        maxTokens: typeof params.max_tokens === 'number' ? params.max_tokens : null,
      });
    }
    if (v.type === 'custom-title' && str(v.customTitle)) ctx.title = String(v.customTitle);
    if (v.type === 'summary' && str(v.summary)) summary ??= String(v.summary);
  }
  ctx.title ??= summary;
  return ctx;
}

/** The entries from the session's root to its last conversational line (the branch it ended on). */
function branch(entries: Entry[], ctx: Context): Entry[] {
  const last = [...entries]
    .reverse()
    .find((e) => (e.value.type === 'assistant' || e.value.type === 'user') && e.value.isSidechain !== true);
  const out: Entry[] = [];
  const seen = new Set<string>();
  let at: Entry | undefined = last;
  while (at && !seen.has(String(at.value.uuid))) {
    seen.add(String(at.value.uuid));
    out.push(at);
    const parent = str(at.value.parentUuid) ?? str(at.value.logicalParentUuid);
    at = parent ? ctx.byUuid.get(parent) : undefined;
  }
  return out.reverse();
}

/** A message's content blocks without media (noted), a string as one text block. */
function blocksOf(content: unknown, notes: Notes): Block[] {
  if (typeof content === 'string') return content ? [{ type: 'text', text: content }] : [];
  if (!Array.isArray(content)) return [];
  const out: Block[] = [];
  for (const b of content) {
    if (!isObject(b)) continue;
    if (MEDIA.has(String(b.type))) {
      notes.add(`${b.type} blocks left out (the chat template takes text)`);
      continue;
    }
    if (b.type === 'tool_result' && Array.isArray(b.content)) {
      const kept = b.content.filter((p) => !(isObject(p) && MEDIA.has(String(p.type))));
      if (kept.length < b.content.length)
        notes.add(
          'images in tool results left out (the chat template takes text)',
          b.content.length - kept.length,
        );
      out.push({ ...b, content: kept });
      continue;
    }
    if (!['text', 'tool_use', 'tool_result', 'thinking', 'redacted_thinking'].includes(String(b.type))) {
      notes.add(`${String(b.type)} blocks left out`);
      continue;
    }
    out.push(b);
  }
  return out;
}

function append(messages: Message[], role: Message['role'], content: Block[]): void {
  if (!content.length) return;
  const last = messages.at(-1);
  if (last && last.role === role) last.content = [...last.content, ...content];
  else messages.push({ role, content });
}

/** The system prompt and tools the answer's request had, where the CLI wrote them. */
function shapeFor(answer: Record<string, unknown>, ctx: Context, snapshot: Block | null) {
  const req = ctx.requests.get(String(answer.requestRef ?? ''));
  const shape = req?.shapeHash ? ctx.shapes.get(req.shapeHash) : undefined;
  if (shape) return { system: shape.system, tools: shape.tools };
  if (snapshot && Array.isArray(snapshot.systemPrompt)) {
    const texts = [str(snapshot.cliPrefix), ...snapshot.systemPrompt.map(str)].filter((t) => t !== null);
    return { system: texts.map((text) => ({ type: 'text', text })), tools: snapshot.tools };
  }
  return { system: undefined, tools: undefined };
}

/** The answer of an assistant line and the lines after it that continue the same message. */
function answerAt(
  chain: Entry[],
  i: number,
): { end: number; message: Record<string, unknown>; content: unknown[] } {
  const message = chain[i].value.message as Record<string, unknown>;
  const content: unknown[] = Array.isArray(message.content) ? [...message.content] : [];
  let end = i + 1;
  while (end < chain.length && chain[end].value.type === 'assistant') {
    const next = chain[end].value.message;
    if (!isObject(next) || !message.id || next.id !== message.id) break;
    if (Array.isArray(next.content)) content.push(...next.content);
    end++;
  }
  return { end, message: { ...(chain[end - 1].value.message as Record<string, unknown>) }, content };
}

function usageOf(u: unknown): SessionCall['usage'] {
  if (!isObject(u)) return null;
  const n = (k: string) => (typeof u[k] === 'number' ? (u[k] as number) : 0);
  return {
    prompt_tokens: n('input_tokens') + n('cache_read_input_tokens') + n('cache_creation_input_tokens'),
    completion_tokens: n('output_tokens'),
  };
}

/** Notes the lines not on the session's branch: sub-agent lines, and messages of branches it left. */
function noteLeftOut(entries: Entry[], chain: Entry[], notes: Notes): void {
  const sidechains = entries.filter((e) => e.value.isSidechain === true).length;
  if (sidechains) notes.add('sub-agent (sidechain) lines left out', sidechains);
  const onBranch = new Set(chain.map((e) => e.line));
  const elsewhere = entries.filter(
    (e) =>
      (e.value.type === 'user' || e.value.type === 'assistant') &&
      e.value.isSidechain !== true &&
      !onBranch.has(e.line),
  ).length;
  if (elsewhere) notes.add('messages on branches the session left (a rewind or an edit) left out', elsewhere);
}

/** The text an attachment line showed the model (its `rendered` parts), with the role it was shown as. */
function renderedOf(v: Record<string, unknown>): { role: 'user' | 'system'; text: string } | null {
  const rendered = Array.isArray(v.rendered)
    ? v.rendered.map((r) => (isObject(r) ? str(r.content) : null))
    : [];
  const texts = rendered.filter((t) => t !== null);
  return texts.length
    ? { role: v.renderedRole === 'system' ? 'system' : 'user', text: texts.join('\n') }
    : null;
}

/** Reads a Claude Code session file's lines (`file` names the session when its lines do not). */
export function readClaudeCodeSession(entries: Entry[], bad: BadLine[], file: string): ParsedSession {
  const notes = new Notes();
  const ctx = collect(entries);
  const chain = branch(entries, ctx);
  const calls: SessionCall[] = [];
  let messages: Message[] = [];
  let snapshot: Block | null = null;
  let lastInputAt: string | null = null;
  let firstUser: string | null = null;
  for (let i = 0; i < chain.length; i++) {
    const { value: v, line } = chain[i];
    if (v.type === 'system' && v.subtype === 'compact_boundary') messages = [];
    if (v.type === 'attachment') {
      const a = isObject(v.attachment) ? v.attachment : {};
      if (a.type === 'prompt_snapshot') snapshot = a;
      const shown = renderedOf(v);
      if (shown) append(messages, shown.role, [{ type: 'text', text: shown.text }]);
    }
    if (v.type === 'user' && isObject(v.message)) {
      const content = blocksOf(v.message.content, notes);
      firstUser ??=
        content.map((b) => (b.type === 'text' ? String(b.text) : '')).find((t) => titleOf(t)) ?? null;
      append(messages, 'user', content);
    }
    if (v.type !== 'assistant') {
      lastInputAt = str(v.timestamp) ?? lastInputAt;
      continue;
    }
    if (!isObject(v.message)) {
      bad.push({ line, error: 'an assistant line without its message' });
      continue;
    }
    const answer = answerAt(chain, i);
    const last = chain[answer.end - 1];
    i = answer.end - 1;
    if (answer.message.model === '<synthetic>' || v.isApiErrorMessage === true) {
      notes.add('messages the CLI wrote itself (not model answers) left out');
      continue;
    }
    const content = blocksOf(answer.content, notes);
    const call = callOf({
      v,
      line,
      answer,
      content,
      messages,
      ctx,
      snapshot,
      lastInputAt,
      lastAt: str(last.value.timestamp),
    });
    if ('error' in call) bad.push({ line, error: call.error });
    else calls.push(call);
    append(messages, 'assistant', content);
  }
  noteLeftOut(entries, chain, notes);
  const times = chain.map((e) => str(e.value.timestamp)).filter((t) => t !== null);
  const first = chain.find((e) => str(e.value.sessionId))?.value;
  return {
    source: 'claude-code',
    session_id: str(first?.sessionId) ?? file.replace(/^.*\//, '').replace(/\.jsonl$/, ''),
    cwd: str(chain.find((e) => str(e.value.cwd))?.value.cwd),
    title: ctx.title ?? (firstUser ? titleOf(firstUser) : null),
    cli_version: str(first?.version),
    started_at: times[0] ?? null,
    ended_at: times.at(-1) ?? null,
    calls,
    bad_lines: bad,
    notes: notes.list(),
  };
}

function callOf(a: {
  v: Record<string, unknown>;
  line: number;
  answer: ReturnType<typeof answerAt>;
  content: Block[];
  messages: Message[];
  ctx: Context;
  snapshot: Block | null;
  lastInputAt: string | null;
  lastAt: string | null;
}): SessionCall | { error: string } {
  const { answer, ctx } = a;
  const model = str(answer.message.model);
  const shape = shapeFor(a.v, ctx, a.snapshot);
  const req = ctx.requests.get(String(a.v.requestRef ?? ''));
  const request: Record<string, unknown> = {
    model: model ?? 'unknown',
    ...(req?.maxTokens ? { max_tokens: req.maxTokens } : {}),
    ...(shape.system ? { system: shape.system } : {}),
    ...(Array.isArray(shape.tools) && shape.tools.length ? { tools: shape.tools } : {}),
    // the messages as they stand now (append gives a message a new content array, never edits one)
    messages: a.messages.map((m) => ({ ...m })),
  };
  if (!a.messages.length)
    return { error: 'an answer with no request before it (nothing the model was asked)' };
  const startedAt = req?.timestamp ?? a.lastInputAt;
  return {
    wire_api: 'messages',
    request,
    response: {
      id: answer.message.id ?? null,
      type: 'message',
      role: 'assistant',
      model,
      content: a.content,
      stop_reason: answer.message.stop_reason ?? null,
      stop_sequence: answer.message.stop_sequence ?? null,
      usage: answer.message.usage ?? null,
    },
    model,
    finish_reason: str(answer.message.stop_reason),
    usage: usageOf(answer.message.usage),
    started_at: startedAt,
    total_ms: msBetween(startedAt, a.lastAt),
    line: a.line,
  };
}
