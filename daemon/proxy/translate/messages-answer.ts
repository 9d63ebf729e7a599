// Chat Completions answer → the Message of a non-streamed request, and the stop reason, usage and id
// that the stream (messages-stream.ts) ends with too.
import { newId, parseArguments, reasoningOf, usageOf } from './common';
import type { MessagesRequest } from './messages-schema';
import type { ChatResponse } from './types';

export type StopReason = 'end_turn' | 'max_tokens' | 'stop_sequence' | 'tool_use';

export function stopReasonOf(
  finish: string | null | undefined,
  vllmStop: unknown,
  hasTools: boolean,
  req: MessagesRequest,
): { stop_reason: StopReason; stop_sequence: string | null } {
  if (finish === 'length') return { stop_reason: 'max_tokens', stop_sequence: null };
  if (hasTools) return { stop_reason: 'tool_use', stop_sequence: null }; // finish 'tool_calls' without a parsed call is an end_turn
  if (typeof vllmStop === 'string' && req.stop_sequences?.includes(vllmStop))
    return { stop_reason: 'stop_sequence', stop_sequence: vllmStop };
  return { stop_reason: 'end_turn', stop_sequence: null };
}

export function usageBlock(input: number, output: number, cached: number) {
  return {
    input_tokens: input,
    output_tokens: output,
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: cached,
  };
}

export function messageId(chatId: string | undefined): string {
  return chatId ? `msg_${chatId.replace(/^chatcmpl-/, '')}` : newId('msg_');
}

export function messagesFromChat(resp: ChatResponse, req: MessagesRequest) {
  const choice = resp.choices?.[0];
  const msg = (choice?.message ?? {}) as ChatResponse['choices'][number]['message'];
  const content: unknown[] = [];
  const reasoning = reasoningOf(msg);
  if (reasoning) content.push({ type: 'thinking', thinking: reasoning, signature: '' });
  if (msg.content) content.push({ type: 'text', text: msg.content });
  const calls = (msg.tool_calls ?? []).filter((t) => t.type === 'function');
  for (const t of calls)
    content.push({
      type: 'tool_use',
      id: t.id || newId('toolu_'),
      name: t.function.name,
      input: parseArguments(t.function.arguments),
    });
  const u = usageOf(resp);
  return {
    id: messageId(resp.id),
    type: 'message' as const,
    role: 'assistant' as const,
    model: req.model,
    content,
    ...stopReasonOf(
      choice?.finish_reason,
      (choice as { stop_reason?: unknown } | undefined)?.stop_reason,
      calls.length > 0,
      req,
    ),
    usage: usageBlock(u?.prompt_tokens ?? 0, u?.completion_tokens ?? 0, u?.cached_tokens ?? 0),
  };
}
