// The token bridge planned in the daemon (no round trips): the request rendered as text twice with the
// model's own template, the new messages tokenized with its own tokenizer. Same plan and same checks
// as proxy/tito/bridge.ts planBridge, which asks the backend instead; see there why it is safe.
import {
  type BridgePlan,
  type BridgeRequest,
  bridgeProbe,
  type PreviousCall,
  SENTINEL,
} from '../proxy/tito/bridge';
import type { ChatMessageLike, ChatToolLike } from '../proxy/tito/tokenizer';
import type { LocalChatTokenizer } from './local';
import { BOUNDARY } from './skip';

export type LocalPlan =
  /** tail: the marker and the new messages' ids, what the backend's rendering must end with. */
  (Extract<BridgePlan, { ok: true }> & { tail: number[] }) | Extract<BridgePlan, { ok: false }>;

/** Whether a string anywhere in `value` contains one of `texts`. */
function mentions(value: unknown, texts: string[]): boolean {
  if (typeof value === 'string') return texts.some((t) => value.includes(t));
  if (Array.isArray(value)) return value.some((v) => mentions(v, texts));
  if (value && typeof value === 'object') return Object.values(value).some((v) => mentions(v, texts));
  return false;
}

/**
 * The probe's and the request's renderings, both from message `n` (the previous answer's place) on
 * when the template renders that exactly (LocalChatTokenizer.renderTextFrom), else both whole. Taken
 * from `n` on, the sentinel's one place and what follows it are the whole rendering's: the text before
 * message n holds neither the sentinel nor the boundary (no string of the request does), and a request
 * rendering that ends with the probe's tail from n on ends with it whole.
 */
function renderings(
  tok: LocalChatTokenizer,
  probe: ChatMessageLike[],
  msgs: ChatMessageLike[],
  tools: ChatToolLike[] | undefined,
  kwargs: Record<string, unknown> | undefined,
  n: number,
): [string, string] {
  if (!mentions([msgs, tools, kwargs], [SENTINEL, BOUNDARY])) {
    const probeText = tok.renderTextFrom(probe, tools, true, kwargs, n);
    const fullText = probeText === null ? null : tok.renderTextFrom(msgs, tools, true, kwargs, n);
    if (probeText !== null && fullText !== null) return [probeText, fullText];
  }
  return [tok.renderText(probe, tools, true, kwargs), tok.renderText(msgs, tools, true, kwargs)];
}

/**
 * In text: render the request with the previous assistant turn replaced by a sentinel; what follows
 * the sentinel must open with a special token that encode splits at (the end-of-turn marker, e.g.
 * <|im_end|>), and the real rendering must end with exactly that text. Then the prompt is the previous
 * prompt, the sampled tokens, the marker and the encoding of the text after it: what the backend's
 * encode of the whole rendering ends with, because encode splits at special tokens before any BPE.
 */
export function planLocal(
  last: PreviousCall | null | undefined,
  request: BridgeRequest,
  tok: LocalChatTokenizer,
): LocalPlan {
  const start = bridgeProbe(last, request);
  if (!start.ok) return start;
  const { previous, msgs, tools, kwargs, probe } = start;
  const [probeText, fullText] = renderings(tok, probe, msgs, tools, kwargs, previous.messages.length);
  const at = probeText.indexOf(SENTINEL);
  if (at < 0 || probeText.indexOf(SENTINEL, at + 1) >= 0)
    return { ok: false, reason: 'the request contains the bridge sentinel text, or the template drops it' };
  const suffix = probeText.slice(at + SENTINEL.length);
  const marker = tok.splitterAt(suffix);
  if (!marker)
    return {
      ok: false,
      reason: 'template suffix mismatch: the assistant turn does not end on a special token',
    };
  if (!fullText.endsWith(suffix))
    return { ok: false, reason: 'template suffix mismatch: the tail depends on the earlier turns' };
  const tailIds = tok.encode(suffix.slice(marker.text.length));
  const sampled = previous.response_ids;
  const closing = sampled[sampled.length - 1] === marker.id ? [] : [marker.id];
  return {
    ok: true,
    // concat, not spread: spreading an agent's 12k ids through the iterator took ~150 µs, concat ~15
    prompt_ids: previous.prompt_ids.concat(sampled, closing, tailIds),
    reused_tokens: previous.prompt_ids.length + sampled.length,
    thinking: /<think>\s*$/.test(suffix),
    tail: [marker.id].concat(tailIds),
  };
}
