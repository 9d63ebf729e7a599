// The token-in-token-out bridge: when a harness resends earlier turns as text, reuse the tokens that were
// actually sampled (and the prompt they were sampled from) and tokenize only the new messages.
//
// Why it is safe. The prompt we build is
//   previous.prompt_ids + previous.response_ids [+ end-of-turn marker if the sample lacks it] + tail
// where `tail` is the tokens the chat template puts after the marker (`<|im_end|>`) that closes the
// previous assistant turn: the new messages plus the generation prompt. We get both in token space:
//   1. render the request with the previous assistant turn replaced by a sentinel text: the token
//      after the sentinel's tokens is the marker, everything after it the tail. The tail so found
//      cannot depend on how the template renders the sampled turn (Qwen3 strips <think> there and
//      re-serialises tool-call JSON, exactly what we must not depend on);
//   2. render the real request: it must end with exactly [marker] + tail, token for token. So the
//      backend's own tokenization splits at the marker (special tokens are split before BPE) and our
//      tail is precisely the tokens a plain rendering gives the new messages.
// Before that, the request must be previous.messages + (the message that call returned) + new
// messages, compared semantically, with the same tools and template options. Anything else falls
// back (`ok: false`) with a reason; the caller then renders the request normally.
import type { HistoryChange } from '../../protocol/entities';
import type { ChatMessageLike, ChatTokenizer, ChatToolLike } from './tokenizer';
import { contentText } from './tokenizer';

export interface PreviousCall {
  /** The messages of the previous call's request (as the harness sent them). */
  messages: ChatMessageLike[];
  tools?: ChatToolLike[] | null;
  /** chat_template_kwargs of the previous request, if any (e.g. enable_thinking). */
  chat_template_kwargs?: Record<string, unknown> | null;
  prompt_ids: number[];
  response_ids: number[];
  /** The assistant message that call returned (content, tool_calls, reasoning_content). */
  assistant_message: ChatMessageLike;
}

export interface BridgeRequest {
  messages: ChatMessageLike[];
  tools?: ChatToolLike[] | null;
  chat_template_kwargs?: Record<string, unknown> | null;
}

export type BridgePlan =
  | {
      ok: true;
      /** previous.prompt_ids, previous.response_ids, then the new ids (the proxy writes its text so). */
      prompt_ids: number[];
      /** previous.prompt_ids + previous.response_ids: the tokens taken from the recorded call. */
      reused_tokens: number;
      /** The generation prompt opens a think block (the output starts inside it): pass to completionToChat. */
      thinking: boolean;
    }
  | { ok: false; reason: string; change?: HistoryChange };

/**
 * Deep equality of JSON values: object keys in any order, a key whose value is undefined as if absent
 * (as JSON.stringify drops it). Walks both at once and stops at the first difference.
 */
export function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!sameJson(a[i], b[i])) return false;
    return true;
  }
  const x = a as Record<string, unknown>;
  const y = b as Record<string, unknown>;
  let defined = 0;
  for (const k in x) {
    if (x[k] === undefined) continue;
    defined++;
    if (!sameJson(x[k], y[k])) return false;
  }
  for (const k in y) if (y[k] !== undefined) defined--;
  return defined === 0;
}

function parsedArgs(args: unknown): unknown {
  if (typeof args !== 'string') return args ?? {};
  try {
    return JSON.parse(args);
  } catch {
    return args;
  }
}

/** Text of an assistant content with a leading <think>…</think> block removed (some harnesses keep it). */
function visibleText(content: unknown): string {
  const s = contentText(content);
  const end = s.indexOf('</think>');
  return (end >= 0 && s.trimStart().startsWith('<think>') ? s.slice(end + 8) : s).trim();
}

/** The same tool calls: names and arguments, the arguments compared as parsed JSON (formatting aside). */
function sameToolCalls(a: ChatMessageLike, b: ChatMessageLike): boolean {
  const ca: Record<string, any>[] = Array.isArray(a.tool_calls) ? a.tool_calls : [];
  const cb: Record<string, any>[] = Array.isArray(b.tool_calls) ? b.tool_calls : [];
  if (ca.length !== cb.length) return false;
  return ca.every((x, i) => {
    const y = cb[i];
    if (x?.function?.name !== y?.function?.name) return false;
    const ax = x?.function?.arguments;
    const ay = y?.function?.arguments;
    return ax === ay || sameJson(parsedArgs(ax), parsedArgs(ay));
  });
}

type Change = Pick<HistoryChange, 'change' | 'detail'>;

/** Where two texts first differ, shown as a short excerpt of each. */
function editedAt(a: string, b: string): string {
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  const excerpt = (s: string) => JSON.stringify(s.slice(Math.max(0, i - 12), i + 28));
  return `content edited at character ${i}: ${excerpt(b)} where it was ${excerpt(a)}`;
}

/**
 * How message `b` differs from `a` in what it means to the model, or null: content text, tool calls
 * (names and parsed arguments), tool_call_id and name. Reasoning is ignored: the tokens we reuse are the
 * sampled ones, and harnesses commonly drop reasoning when they resend history; so is the formatting of
 * tool-call JSON.
 */
export function messageChange(a: ChatMessageLike, b: ChatMessageLike, assistantLoose = false): Change | null {
  if (a.role !== b.role) return { change: 'role_changed', detail: `role ${a.role} ≠ ${b.role}` };
  const ca = assistantLoose ? visibleText(a.content) : contentText(a.content);
  const cb = assistantLoose ? visibleText(b.content) : contentText(b.content);
  if (ca !== cb)
    return ca.replace(/\s+/g, '') === cb.replace(/\s+/g, '')
      ? { change: 'whitespace', detail: `content differs in whitespace only (${editedAt(ca, cb).slice(15)})` }
      : { change: 'content_edited', detail: editedAt(ca, cb) };
  if (!sameToolCalls(a, b))
    return { change: 'tool_calls_edited', detail: 'tool calls differ (names or parsed arguments)' };
  if ((a.tool_call_id ?? null) !== (b.tool_call_id ?? null) && a.role === 'tool')
    return { change: 'tool_call_id_changed', detail: 'tool_call_id differs' };
  if ((a.name ?? null) !== (b.name ?? null)) return { change: 'content_edited', detail: 'name differs' };
  return null;
}

/**
 * The first place where `request` stops being previous.messages + the previous response + new messages:
 * the tools, the template options, or a message (its index and role in the request), or null.
 */
export function historyChange(previous: PreviousCall, request: BridgeRequest): HistoryChange | null {
  const whole = (change: HistoryChange['change'], detail: string): HistoryChange => ({
    index: null,
    role: null,
    change,
    detail,
  });
  if (!sameJson(previous.tools ?? [], request.tools ?? [])) return whole('tools_changed', 'tools changed');
  if (!sameJson(previous.chat_template_kwargs ?? {}, request.chat_template_kwargs ?? {}))
    return whole('template_options_changed', 'chat_template_kwargs changed');
  const expected = [...previous.messages, previous.assistant_message];
  const n = previous.messages.length;
  const msgs = request.messages;
  for (let i = 0; i < expected.length; i++) {
    if (i >= msgs.length)
      return {
        index: i,
        role: expected[i].role,
        change: 'message_removed',
        detail:
          i === n
            ? 'the previous response is not in the request'
            : `the request has ${msgs.length} messages, the previous call had ${n}`,
      };
    const c = messageChange(expected[i], msgs[i], i === n);
    if (c) return { index: i, role: msgs[i].role, ...c };
  }
  return null;
}

/** The text that stands in for the previous assistant turn in a plan's probe rendering. */
export const SENTINEL = 'TITO_SENTINEL_8c1f2e';

/**
 * Where the sentinel's tokens end in `ids`, searching from the end (the tail is short, so only short
 * suffixes get decoded): the index of the first token after the sentinel, or null.
 */
async function sentinelEnd(tok: ChatTokenizer, ids: number[]): Promise<number | null> {
  const L = ids.length;
  const has = async (from: number, to: number) => (await tok.decode(ids.slice(from, to))).includes(SENTINEL);
  // smallest suffix that contains the sentinel: grow by doubling, then bisect
  let s = 32;
  while (s < L && !(await has(L - s, L))) s *= 2;
  s = Math.min(s, L);
  if (!(await has(L - s, L))) return null;
  let lo = Math.floor(s / 2);
  let hi = s; // has(L-hi) true; find the smallest such
  while (lo + 1 < hi) {
    const mid = (lo + hi) >> 1;
    if (await has(L - mid, L)) hi = mid;
    else lo = mid;
  }
  const start = L - hi;
  // smallest end with the whole sentinel in [start, end)
  let a = start;
  let b = L;
  while (a + 1 < b) {
    const mid = (a + b) >> 1;
    if (await has(start, mid)) b = mid;
    else a = mid;
  }
  const text = await tok.decode(ids.slice(start, b));
  return text.endsWith(SENTINEL) ? b : null;
}

/**
 * Why `request` cannot be bridged from `previous` whatever the template (no previous call or ids, an
 * edited history, nothing new, a prefill), or null: the checks every plan starts with.
 */
function bridgeRefusal(
  previous: PreviousCall | null | undefined,
  request: BridgeRequest,
): Extract<BridgePlan, { ok: false }> | null {
  if (!previous) return { ok: false, reason: 'no previous call' };
  if (!previous.prompt_ids.length || !previous.response_ids.length)
    return { ok: false, reason: 'previous call has no recorded token ids' };
  const n = previous.messages.length;
  const msgs = request.messages;
  const change = historyChange(previous, request);
  if (change) {
    const what =
      change.index === null
        ? change.detail
        : `history edited: message ${change.index} (${change.role})${change.index === n ? ' is not the previous response' : ''}: ${change.detail}`;
    return { ok: false, reason: what, change };
  }
  if (msgs.length === n + 1) return { ok: false, reason: 'no new messages after the previous response' };
  if (msgs[msgs.length - 1].role === 'assistant')
    return { ok: false, reason: 'request ends with an assistant message (prefill)' };
  return null;
}

/** What every plan renders: the request's messages, tools and template kwargs, and its probe. */
export interface BridgeProbe {
  ok: true;
  previous: PreviousCall;
  msgs: ChatMessageLike[];
  tools: ChatToolLike[] | undefined;
  kwargs: Record<string, unknown> | undefined;
  /** The messages with the previous assistant turn replaced by the sentinel. */
  probe: ChatMessageLike[];
}

/** The refusal every plan starts with (bridgeRefusal), or what it renders. */
export function bridgeProbe(
  previous: PreviousCall | null | undefined,
  request: BridgeRequest,
): BridgeProbe | Extract<BridgePlan, { ok: false }> {
  const refusal = bridgeRefusal(previous, request);
  if (refusal || !previous) return refusal ?? { ok: false, reason: 'no previous call' };
  const n = previous.messages.length;
  const msgs = request.messages;
  return {
    ok: true,
    previous,
    msgs,
    tools: request.tools?.length ? request.tools : undefined,
    kwargs: request.chat_template_kwargs ?? undefined,
    probe: msgs.map((m, i) => (i === n ? { role: 'assistant', content: SENTINEL } : m)),
  };
}

export async function planBridge(args: {
  previous: PreviousCall | null | undefined;
  request: BridgeRequest;
  tokenizer: ChatTokenizer;
}): Promise<BridgePlan> {
  const { request, tokenizer: tok } = args;
  const start = bridgeProbe(args.previous, request);
  if (!start.ok) return start;
  const { previous, msgs, tools, kwargs, probe } = start;
  if (JSON.stringify([msgs, tools, kwargs]).includes(SENTINEL))
    return { ok: false, reason: 'the request contains the bridge sentinel text' };
  // 1. render the probe: what follows the sentinel's tokens is the end-of-turn marker, then the tail
  //    (new messages + generation prompt)
  const probeIds = await tok.render(probe, tools, true, kwargs);
  const end = await sentinelEnd(tok, probeIds);
  if (end === null || end >= probeIds.length)
    return {
      ok: false,
      reason: 'template suffix mismatch: the assistant turn does not end on a token boundary',
    };
  const marker = probeIds[end];
  const tailIds = probeIds.slice(end + 1);

  // 2. the real rendering ends with [marker] + tail, token for token
  const full = await tok.render(msgs, tools, true, kwargs);
  const cut = full.length - tailIds.length;
  if (cut < 1 || full[cut - 1] !== marker || tailIds.some((t, i) => full[cut + i] !== t))
    return { ok: false, reason: 'template suffix mismatch: the tail depends on the earlier turns' };

  const sampled = previous.response_ids;
  const closing = sampled[sampled.length - 1] === marker ? [] : [marker];
  const prompt_ids = previous.prompt_ids.concat(sampled, closing, tailIds);
  const thinking = /<think>\s*$/.test(await tok.decode(tailIds));
  return { ok: true, prompt_ids, reused_tokens: previous.prompt_ids.length + sampled.length, thinking };
}
