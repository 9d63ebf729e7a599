// The token-in-token-out bridge: when a harness resends earlier turns as text, reuse the tokens that were
// actually sampled (and the prompt they were sampled from) and tokenize only the new messages.
//
// Why it is safe. The prompt we build is
//   previous.prompt_ids + previous.response_ids [+ end-of-turn marker if the sample lacks it] + tail
// where `tail` is the token sequence the chat template puts after the end-of-turn marker (`<|im_end|>`)
// that closes the previous assistant turn: the new messages plus the generation prompt. We take `tail`
// from a full rendering of the request and check three things before using it:
//   1. the marker is one special token (encode(decode([m])) == [m]): tokenizers split text at special
//      tokens before BPE, so the tokens after it do not depend on the tokens before it;
//   2. the tail text does not depend on how the previous assistant turn is rendered: we find it by
//      rendering with the assistant turn replaced by a sentinel (Qwen3 strips <think> and re-serialises
//      tool calls there, which is exactly what we must not depend on);
//   3. the real full rendering of the request ends with exactly [marker] + encode(tail text), i.e. our
//      tail is token-for-token what the backend's own rendering would have produced for it.
// Anything else falls back (`ok: false`) with a reason; the caller then renders the request normally.
import { type ChatMessageLike, type ChatTokenizer, type ChatToolLike, contentText } from './tokenizer';

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
  | { ok: true; prompt_ids: number[]; reused_tokens: number }
  | { ok: false; reason: string };

/** JSON with object keys sorted: equal iff the values are deeply equal. */
function canonical(v: unknown): string {
  return JSON.stringify(v, (_k, x) =>
    x && typeof x === 'object' && !Array.isArray(x)
      ? Object.fromEntries(
          Object.keys(x)
            .sort()
            .filter((k) => x[k] !== undefined)
            .map((k) => [k, x[k]]),
        )
      : x,
  );
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

function toolCallsKey(m: ChatMessageLike): string {
  const calls = Array.isArray(m.tool_calls) ? m.tool_calls : [];
  return canonical(
    calls.map((c: Record<string, any>) => ({
      name: c.function?.name,
      arguments: parsedArgs(c.function?.arguments),
    })),
  );
}

/**
 * Do two messages mean the same thing to the model? Content text, tool calls (names and parsed
 * arguments), tool_call_id and name. Reasoning is ignored: the tokens we reuse are the sampled ones,
 * and harnesses commonly drop reasoning when they resend history.
 */
export function sameMessage(a: ChatMessageLike, b: ChatMessageLike, assistantLoose = false): string | null {
  if (a.role !== b.role) return `role ${a.role} ≠ ${b.role}`;
  const ca = assistantLoose ? visibleText(a.content) : contentText(a.content);
  const cb = assistantLoose ? visibleText(b.content) : contentText(b.content);
  if (ca !== cb) return 'content differs';
  if (toolCallsKey(a) !== toolCallsKey(b)) return 'tool calls differ';
  if ((a.tool_call_id ?? null) !== (b.tool_call_id ?? null) && a.role === 'tool')
    return 'tool_call_id differs';
  if ((a.name ?? null) !== (b.name ?? null)) return 'name differs';
  return null;
}

const SENTINEL = 'TITO_SENTINEL_8c1f2e';

interface TurnMarker {
  id: number;
  text: string;
}
const markers = new WeakMap<ChatTokenizer, TurnMarker | string>();

/** The special token the template closes an assistant turn with (Qwen: `<|im_end|>`), found by probing. */
async function endOfTurn(tok: ChatTokenizer): Promise<TurnMarker | string> {
  const cached = markers.get(tok);
  if (cached) return cached;
  let result: TurnMarker | string;
  const ids = await tok.render(
    [
      { role: 'user', content: 'ping' },
      { role: 'assistant', content: SENTINEL },
    ],
    undefined,
    false,
  );
  const text = await tok.decode(ids);
  const at = text.lastIndexOf(SENTINEL);
  const after = at >= 0 ? text.slice(at + SENTINEL.length) : '';
  const suffixIds = after ? await tok.encode(after) : [];
  if (!suffixIds.length) result = 'template puts no end-of-turn marker after an assistant turn';
  else {
    const id = suffixIds[0];
    const markerText = await tok.decode([id]);
    const again = await tok.encode(markerText);
    result =
      markerText && after.startsWith(markerText) && again.length === 1 && again[0] === id
        ? { id, text: markerText }
        : `end-of-turn marker ${JSON.stringify(markerText)} is not one special token`;
  }
  markers.set(tok, result);
  return result;
}

export async function planBridge(args: {
  previous: PreviousCall | null | undefined;
  request: BridgeRequest;
  tokenizer: ChatTokenizer;
}): Promise<BridgePlan> {
  const { previous, request, tokenizer: tok } = args;
  if (!previous) return { ok: false, reason: 'no previous call' };
  if (!previous.prompt_ids.length || !previous.response_ids.length)
    return { ok: false, reason: 'previous call has no recorded token ids' };
  if (canonical(previous.tools ?? []) !== canonical(request.tools ?? []))
    return { ok: false, reason: 'tools changed' };
  if (canonical(previous.chat_template_kwargs ?? {}) !== canonical(request.chat_template_kwargs ?? {}))
    return { ok: false, reason: 'chat_template_kwargs changed' };

  const n = previous.messages.length;
  const msgs = request.messages;
  if (msgs.length <= n)
    return { ok: false, reason: 'history edited: request is not longer than the previous call' };
  for (let i = 0; i < n; i++) {
    const why = sameMessage(previous.messages[i], msgs[i]);
    if (why) return { ok: false, reason: `history edited: message ${i} (${why})` };
  }
  const why = sameMessage(previous.assistant_message, msgs[n], true);
  if (why) return { ok: false, reason: `history edited: message ${n} is not the previous response (${why})` };
  if (msgs.length === n + 1) return { ok: false, reason: 'no new messages after the previous response' };
  if (msgs[msgs.length - 1].role === 'assistant')
    return { ok: false, reason: 'request ends with an assistant message (prefill)' };

  const marker = await endOfTurn(tok);
  if (typeof marker === 'string') return { ok: false, reason: `template suffix mismatch: ${marker}` };

  const tools = request.tools?.length ? request.tools : undefined;
  const kwargs = request.chat_template_kwargs ?? undefined;
  // 2. the tail as the template renders it after a sentinel assistant turn
  const probe = msgs.map((m, i) => (i === n ? { role: 'assistant', content: SENTINEL } : m));
  const probeText = await tok.decode(await tok.render(probe, tools, true, kwargs));
  const at = probeText.indexOf(SENTINEL);
  if (at < 0 || probeText.indexOf(SENTINEL, at + 1) >= 0)
    return { ok: false, reason: 'template suffix mismatch: sentinel turn not found once' };
  const afterSentinel = probeText.slice(at + SENTINEL.length);
  if (!afterSentinel.startsWith(marker.text))
    return { ok: false, reason: 'template suffix mismatch: assistant turn does not end with its marker' };
  const tailIds = await tok.encode(afterSentinel.slice(marker.text.length));

  // 3. the real rendering ends with [marker] + tail
  const full = await tok.render(msgs, tools, true, kwargs);
  const cut = full.length - tailIds.length;
  if (cut < 1 || full[cut - 1] !== marker.id || tailIds.some((t, i) => full[cut + i] !== t))
    return { ok: false, reason: 'template suffix mismatch: the tail depends on the earlier turns' };

  const sampled = previous.response_ids;
  const closing = sampled[sampled.length - 1] === marker.id ? [] : [marker.id];
  const prompt_ids = [...previous.prompt_ids, ...sampled, ...closing, ...tailIds];
  return { ok: true, prompt_ids, reused_tokens: previous.prompt_ids.length + sampled.length };
}
