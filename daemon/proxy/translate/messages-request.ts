// Anthropic Messages request → Chat Completions request: system, content blocks (text, thinking,
// tool_use, tool_result) as chat messages, custom tools as function tools; server tools left out.
import type { z } from 'zod';
import type { CountTokensRequest, CustomTool } from './messages-schema';
import type { ChatRequest, LeftOutTool } from './types';

const SERVER = "server tool: it runs on Anthropic's side, and the inference backend cannot run it";

/** The server tools of a request, which the backend does not get. */
export function messagesLeftOut(req: CountTokensRequest): LeftOutTool[] {
  const out: LeftOutTool[] = [];
  (req.tools ?? []).forEach((t, i) => {
    if (t.type === 'server') out.push({ path: `tools[${i}]`, tool: String(t.tool.type), reason: SERVER });
  });
  return out;
}

type ChatMessage = Record<string, unknown>;

function textOf(content: { type: string; text?: unknown }[]): string {
  return content
    .filter((b) => b.type === 'text')
    .map((b) => String(b.text ?? ''))
    .join('\n');
}

/**
 * Anthropic allows `role: "system"` messages inside `messages`, after a user turn; Claude Code ≥ 2.1.2xx
 * sends its environment / agent-type text that way on its first request, `[user, system]`. Chat
 * templates do not take a system message that is not first: Qwen3.5/3.6 raise "System message must be
 * at the beginning.", Qwen3 renders it as a mid-conversation system turn. So:
 * - one before the first assistant turn joins the leading system message (after the top-level
 *   `system`, in order): it stays a system instruction, and every later call of the session, which
 *   resends it at the same place, renders the same leading tokens;
 * - one after an assistant turn becomes a user message in place, its text unchanged: moving it to the
 *   top would change the prompt under turns already sampled (every later call would break the token
 *   prefix of the earlier ones), and Claude Code already sends its other reminders as user text.
 */
function toChatMessages(req: CountTokensRequest): ChatMessage[] {
  const out: ChatMessage[] = [];
  const leading: string[] = [];
  if (req.system !== undefined) {
    const s = typeof req.system === 'string' ? req.system : req.system.map((b) => b.text).join('\n\n');
    if (s) leading.push(s);
  }
  const firstAssistant = req.messages.findIndex((m) => m.role === 'assistant');
  req.messages.forEach((m, i) => {
    if (m.role === 'system' && (firstAssistant < 0 || i < firstAssistant)) {
      const s = textOf(m.content);
      if (s) leading.push(s);
    }
  });
  if (leading.length) out.push({ role: 'system', content: leading.join('\n\n') });
  req.messages.forEach((m, i) => {
    if (m.role === 'system' && (firstAssistant < 0 || i < firstAssistant)) return;
    if (m.role === 'assistant') {
      let content = '';
      let reasoning: string | null = null;
      const toolCalls: unknown[] = [];
      for (const b of m.content) {
        if (b.type === 'text') content += b.text;
        else if (b.type === 'thinking') reasoning = (reasoning ?? '') + b.thinking;
        else if (b.type === 'tool_use')
          toolCalls.push({
            id: b.id,
            type: 'function',
            function: { name: b.name, arguments: JSON.stringify(b.input) },
          });
      }
      const msg: ChatMessage = { role: 'assistant', content };
      if (reasoning !== null) msg.reasoning_content = reasoning;
      if (toolCalls.length) msg.tool_calls = toolCalls;
      out.push(msg);
      return;
    }
    // user (or a late system, as user) with blocks: tool results become chat `tool` messages, in
    // order; the text after them one message.
    let text: string[] = [];
    const flush = () => {
      if (text.length) out.push({ role: 'user', content: text.join('\n') });
      text = [];
    };
    for (const b of m.content) {
      if (b.type === 'tool_result') {
        flush();
        const c = b.content === undefined ? '' : textOf(b.content as { type: string; text?: unknown }[]);
        out.push({ role: 'tool', tool_call_id: b.tool_use_id, content: b.is_error ? `Error: ${c}` : c });
      } else if (b.type === 'text') text.push(String(b.text));
    }
    flush();
  });
  return out;
}

export function messagesToChat(req: CountTokensRequest): ChatRequest {
  const chat: Record<string, unknown> = { model: req.model, messages: toChatMessages(req) };
  if (req.max_tokens !== undefined) chat.max_tokens = req.max_tokens;
  const tools = (req.tools ?? []).filter((t) => t.type !== 'server') as z.infer<typeof CustomTool>[];
  if (tools.length)
    chat.tools = tools.map((t) => ({
      type: 'function',
      function: {
        name: t.name,
        ...(t.description !== undefined ? { description: t.description } : {}),
        parameters: t.input_schema,
      },
    }));
  const tc = req.tool_choice;
  if (tc) {
    if (tc.type === 'auto') chat.tool_choice = 'auto';
    else if (tc.type === 'any') chat.tool_choice = 'required';
    else if (tc.type === 'none') chat.tool_choice = 'none';
    else chat.tool_choice = { type: 'function', function: { name: tc.name } };
    if (tc.type !== 'none' && tc.disable_parallel_tool_use) chat.parallel_tool_calls = false;
  }
  if (req.stop_sequences?.length) chat.stop = req.stop_sequences;
  if (req.temperature !== undefined) chat.temperature = req.temperature;
  if (req.top_p !== undefined) chat.top_p = req.top_p;
  if (req.top_k !== undefined) chat.top_k = req.top_k;
  if (req.metadata?.user_id) chat.user = req.metadata.user_id;
  if (req.thinking?.type === 'disabled') chat.chat_template_kwargs = { enable_thinking: false };
  if (req.stream) {
    chat.stream = true;
    chat.stream_options = { include_usage: true };
  }
  return chat as ChatRequest;
}
