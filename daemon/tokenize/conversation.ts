// Chat messages as vLLM 0.34 hands them to a chat template (renderers/chat_utils/chat_message.py
// parse_chat_message_content and _postprocess_messages, renderers/hf.py safe_apply_chat_template), so the
// daemon's own rendering is the backend's, byte for byte.
import type { ChatMessageLike } from '../proxy/tito/tokenizer';

/** Text parts joined with '\n' (chat_message.py:161), a string as is, null as ''. */
function textOf(content: unknown): string {
  if (content == null) return '';
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return String(content);
  const texts: string[] = [];
  for (const p of content)
    if (typeof p === 'string') texts.push(p);
    else if (p && typeof p === 'object' && (p as { type?: unknown }).type === 'text')
      texts.push(String((p as { text?: unknown }).text ?? ''));
  return texts.join('\n');
}

const BILLING_HEADER = 'x-anthropic-billing-header';

/**
 * A system content without Claude Code's attribution line (chat_message.py:576-606): vLLM drops a text
 * part that starts with it up to its first newline (the whole part when nothing follows).
 */
function withoutBillingHeader(content: unknown): unknown {
  const strip = (text: string): string | null => {
    if (!text.startsWith(BILLING_HEADER)) return text;
    const at = text.indexOf('\n');
    return at < 0 || at === text.length - 1 ? null : text.slice(at + 1);
  };
  if (typeof content === 'string') return strip(content) ?? [];
  if (!Array.isArray(content)) return content;
  const out: unknown[] = [];
  for (const p of content) {
    const text = typeof p === 'string' ? p : p?.type === 'text' ? p.text : null;
    if (typeof text !== 'string') out.push(p);
    else {
      const kept = strip(text);
      if (kept !== null) out.push(typeof p === 'string' ? kept : { ...p, text: kept });
    }
  }
  return out;
}

/**
 * Tool-call arguments as a template gets them (chat_message.py:699-771): a JSON string parsed, an
 * empty, malformed or non-object one coerced to {}.
 */
function argumentsOf(args: unknown): unknown {
  if (!args) return {};
  let parsed: unknown = args;
  if (typeof args === 'string') {
    try {
      parsed = JSON.parse(args);
    } catch {
      return {};
    }
  }
  return parsed && typeof parsed === 'object' && !Array.isArray(parsed) ? parsed : {};
}

/** Whether the template itself handles the developer role (renderers/hf.py:607). */
const handlesDeveloper = (template: string) =>
  template.includes('"developer"') || template.includes("'developer'");

/** System messages merged into one at the start, as hf.py:626 _consolidate_system_messages does. */
function consolidated(conversation: ChatMessageLike[]): ChatMessageLike[] {
  const system: string[] = [];
  const rest: ChatMessageLike[] = [];
  let needed = false;
  conversation.forEach((m, i) => {
    if (m.role !== 'system') {
      rest.push(m);
      return;
    }
    if (i > 0 || system.length) needed = true;
    const text = textOf(m.content);
    if (text) system.push(text);
  });
  return needed ? [{ role: 'system', content: system.join('\n\n') }, ...rest] : conversation;
}

/**
 * `messages` as the template sees them (the "string" content format: vLLM's choice for a template that
 * does not loop over message content, hf.py:586 _detect_content_format; every template served here).
 */
export function templateConversation(messages: ChatMessageLike[], template: string): ChatMessageLike[] {
  let out = messages.map((m) => {
    const content = m.role === 'system' ? withoutBillingHeader(m.content) : m.content;
    const msg: ChatMessageLike = { role: m.role, content: textOf(content) };
    if (m.role === 'assistant') {
      if (Array.isArray(m.tool_calls) && m.tool_calls.length)
        // biome-ignore lint/suspicious/noExplicitAny: a tool call as the harness sent it
        msg.tool_calls = m.tool_calls.map((tc: Record<string, any>) => ({
          ...tc,
          function: { ...tc.function, arguments: argumentsOf(tc.function?.arguments) },
        }));
      // the deprecated reasoning_content is renamed (entrypoints/openai/chat_completion/protocol.py:600)
      const reasoning = m.reasoning ?? m.reasoning_content;
      if (reasoning != null) {
        msg.reasoning = reasoning;
        msg.reasoning_content = reasoning; // chat_message.py:655-660
      }
    }
    if (m.role === 'tool' && 'tool_call_id' in m) msg.tool_call_id = m.tool_call_id;
    if (typeof m.name === 'string') msg.name = m.name;
    return msg;
  });
  if (out.some((m) => m.role === 'developer') && !handlesDeveloper(template))
    out = consolidated(out.map((m) => (m.role === 'developer' ? { ...m, role: 'system' } : m)));
  return out;
}
