// Normalizes the request/response bodies of every wire API (chat, completions, responses,
// messages) into one list of conversation entries the trajectory view renders. Pure.
import type { LlmCall } from '../../daemon/protocol/entities';

export type EntryKind = 'text' | 'tool_call' | 'tool_result' | 'thinking';
export interface Entry {
  role: string;
  kind: EntryKind;
  /** '' for an empty turn (shown as such, not hidden) */
  text: string;
  /** tool name for tool calls, tool call id for results */
  name?: string;
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const str = (v: unknown): string =>
  typeof v === 'string' ? v : v === undefined || v === null ? '' : JSON.stringify(v, null, 2);

/** Content that is a string or a list of parts/blocks (OpenAI parts, Anthropic blocks, Responses items). */
function contentEntries(role: string, content: unknown): Entry[] {
  if (typeof content === 'string') return content ? [{ role, kind: 'text', text: content }] : [];
  if (!Array.isArray(content)) return content == null ? [] : [{ role, kind: 'text', text: str(content) }];
  const out: Entry[] = [];
  for (const part of content) {
    if (typeof part === 'string') {
      out.push({ role, kind: 'text', text: part });
      continue;
    }
    if (!isObj(part)) continue;
    switch (part.type) {
      case 'text':
      case 'input_text':
      case 'output_text':
        out.push({ role, kind: 'text', text: str(part.text) });
        break;
      case 'thinking':
        out.push({ role, kind: 'thinking', text: str(part.thinking) });
        break;
      case 'redacted_thinking':
        out.push({ role, kind: 'thinking', text: '(redacted thinking)' });
        break;
      case 'tool_use':
        out.push({ role, kind: 'tool_call', name: str(part.name), text: str(part.input) });
        break;
      case 'tool_result':
        out.push({
          role: 'tool',
          kind: 'tool_result',
          name: str(part.tool_use_id),
          text: Array.isArray(part.content)
            ? contentEntries('tool', part.content)
                .map((e) => e.text)
                .join('\n')
            : str(part.content),
        });
        break;
      case 'image':
      case 'image_url':
      case 'input_image':
        out.push({ role, kind: 'text', text: '[image]' });
        break;
      default:
        out.push({ role, kind: 'text', text: str(part.text ?? part) });
    }
  }
  return out;
}

/** One Chat Completions message (request or response side). */
function chatMessage(m: Obj): Entry[] {
  const role = str(m.role) || 'assistant';
  const out: Entry[] = [];
  const reasoning = m.reasoning_content ?? m.reasoning;
  if (typeof reasoning === 'string' && reasoning) out.push({ role, kind: 'thinking', text: reasoning });
  if (role === 'tool') {
    out.push({
      role: 'tool',
      kind: 'tool_result',
      name: str(m.tool_call_id),
      text: contentEntries(role, m.content)
        .map((e) => e.text)
        .join('\n'),
    });
    return out;
  }
  out.push(...contentEntries(role, m.content));
  if (Array.isArray(m.tool_calls)) {
    for (const tc of m.tool_calls) {
      if (!isObj(tc)) continue;
      const fn = isObj(tc.function) ? tc.function : {};
      out.push({ role, kind: 'tool_call', name: str(fn.name), text: prettyArgs(fn.arguments) });
    }
  }
  // an assistant turn with nothing in it is still a turn: the next message answers it
  if (out.length === 0 && role === 'assistant') out.push({ role, kind: 'text', text: '' });
  return out;
}

function prettyArgs(args: unknown): string {
  if (typeof args !== 'string') return str(args);
  try {
    return JSON.stringify(JSON.parse(args), null, 2);
  } catch {
    return args;
  }
}

/** One Responses API input/output item. */
function responsesItem(item: unknown): Entry[] {
  if (typeof item === 'string') return [{ role: 'user', kind: 'text', text: item }];
  if (!isObj(item)) return [];
  switch (item.type) {
    case 'function_call':
      return [
        { role: 'assistant', kind: 'tool_call', name: str(item.name), text: prettyArgs(item.arguments) },
      ];
    case 'function_call_output':
      return [{ role: 'tool', kind: 'tool_result', name: str(item.call_id), text: str(item.output) }];
    case 'reasoning': {
      const summary = Array.isArray(item.summary)
        ? item.summary.map((s) => (isObj(s) ? str(s.text) : str(s))).join('\n')
        : '';
      const content = Array.isArray(item.content)
        ? item.content.map((s) => (isObj(s) ? str(s.text) : str(s))).join('\n')
        : '';
      return [{ role: 'assistant', kind: 'thinking', text: summary || content || '(reasoning)' }];
    }
    default:
      return contentEntries(str(item.role) || 'assistant', item.content);
  }
}

/** The prompt side of a call: every message the harness sent. */
export function requestEntries(call: Pick<LlmCall, 'wire_api' | 'request'>): Entry[] {
  const req = isObj(call.request) ? call.request : {};
  switch (call.wire_api) {
    case 'chat':
      return Array.isArray(req.messages) ? req.messages.filter(isObj).flatMap(chatMessage) : [];
    case 'messages': {
      const out: Entry[] = [];
      if (req.system) out.push(...contentEntries('system', req.system));
      if (Array.isArray(req.messages))
        for (const m of req.messages) if (isObj(m)) out.push(...contentEntries(str(m.role), m.content));
      return out;
    }
    case 'responses': {
      const out: Entry[] = [];
      if (typeof req.instructions === 'string' && req.instructions)
        out.push({ role: 'system', kind: 'text', text: req.instructions });
      if (typeof req.input === 'string') out.push({ role: 'user', kind: 'text', text: req.input });
      else if (Array.isArray(req.input)) out.push(...req.input.flatMap(responsesItem));
      return out;
    }
    case 'completions':
      return [
        {
          role: 'prompt',
          kind: 'text',
          text: Array.isArray(req.prompt) ? req.prompt.map(str).join('\n') : str(req.prompt),
        },
      ];
  }
  return [];
}

/** The model's side of a call: text, thinking and tool calls it produced. */
export function responseEntries(call: Pick<LlmCall, 'wire_api' | 'response'>): Entry[] {
  const res = isObj(call.response) ? call.response : undefined;
  if (!res) return [];
  switch (call.wire_api) {
    case 'chat': {
      const choice = Array.isArray(res.choices) && isObj(res.choices[0]) ? res.choices[0] : undefined;
      return choice && isObj(choice.message) ? chatMessage({ role: 'assistant', ...choice.message }) : [];
    }
    case 'completions': {
      const choice = Array.isArray(res.choices) && isObj(res.choices[0]) ? res.choices[0] : undefined;
      return choice ? [{ role: 'assistant', kind: 'text', text: str(choice.text) }] : [];
    }
    case 'messages': {
      const entries = contentEntries('assistant', res.content);
      return entries.length ? entries : [{ role: 'assistant', kind: 'text', text: '' }];
    }
    case 'responses':
      return Array.isArray(res.output) ? res.output.flatMap(responsesItem) : [];
  }
  return [];
}

/**
 * The new part of each call's prompt: harnesses resend the whole history, so call k shows only
 * the messages after those call k-1 sent (and skips the resent assistant turn it already showed).
 */
export function newRequestEntries(calls: Pick<LlmCall, 'wire_api' | 'request'>[]): Entry[][] {
  let prev: Entry[] = [];
  return calls.map((call) => {
    const all = requestEntries(call);
    let start = 0;
    const samePrefix =
      prev.length <= all.length && prev.every((e, i) => e.text === all[i].text && e.role === all[i].role);
    if (samePrefix) start = prev.length;
    let fresh = all.slice(start);
    if (samePrefix) while (fresh.length && fresh[0].role === 'assistant') fresh = fresh.slice(1);
    prev = all;
    return fresh;
  });
}
