// Chat Completions answer → the Response object of a non-streamed request, and the Response and item
// shapes the stream (responses-stream.ts) builds its events from.
import { newId, reasoningOf, usageOf } from './common';
import { toolPlan } from './responses-request';
import type { ResponsesRequest } from './responses-schema';
import type { ChatResponse } from './types';

export function idBase(chatId: string | undefined): string {
  const b = chatId?.replace(/^chatcmpl-/, '').replace(/[^A-Za-z0-9_-]/g, '');
  return b || newId('');
}

export interface Usage {
  input: number;
  output: number;
  cached: number;
}

export function responseObject(
  req: ResponsesRequest,
  base: string,
  createdAt: number,
  status: 'in_progress' | 'completed' | 'incomplete',
  output: unknown[],
  usage: Usage | null,
) {
  return {
    id: `resp_${base}`,
    object: 'response' as const,
    created_at: createdAt,
    status,
    background: false,
    error: null,
    incomplete_details: status === 'incomplete' ? { reason: 'max_output_tokens' as const } : null,
    instructions: req.instructions ?? null,
    max_output_tokens: req.max_output_tokens ?? null,
    metadata: req.metadata ?? {},
    model: req.model,
    output,
    parallel_tool_calls: req.parallel_tool_calls ?? true,
    previous_response_id: null,
    reasoning: { effort: req.reasoning?.effort ?? null, summary: req.reasoning?.summary ?? null },
    store: false,
    temperature: req.temperature ?? null,
    text: { format: req.text?.format ?? { type: 'text' } },
    tool_choice: req.tool_choice ?? 'auto',
    tools: (req.tools ?? []).map((t) =>
      t.type === 'function'
        ? {
            type: 'function',
            name: t.name,
            description: t.description ?? null,
            parameters: t.parameters ?? null,
            strict: t.strict ?? null,
          }
        : t.type === 'namespace'
          ? t
          : t.tool,
    ),
    top_p: req.top_p ?? null,
    truncation: 'disabled',
    usage: usage
      ? {
          input_tokens: usage.input,
          input_tokens_details: { cached_tokens: usage.cached },
          output_tokens: usage.output,
          output_tokens_details: { reasoning_tokens: 0 },
          total_tokens: usage.input + usage.output,
        }
      : null,
    user: req.user ?? null,
  };
}

export const reasoningItem = (base: string, text: string) => ({
  id: `rs_${base}`,
  type: 'reasoning' as const,
  summary: [] as unknown[],
  content: [{ type: 'reasoning_text' as const, text }],
});
export const textPart = (text: string) => ({
  type: 'output_text' as const,
  text,
  annotations: [],
  logprobs: [],
});
export const messageItem = (base: string, text: string, status: string) => ({
  id: `msg_${base}`,
  type: 'message' as const,
  role: 'assistant' as const,
  status,
  content: [textPart(text)],
});
/** A function_call item; a namespaced tool's call carries its namespace and its own name. */
export const callItem = (
  req: ResponsesRequest,
  base: string,
  i: number,
  callId: string,
  chatName: string,
  args: string,
  status: string,
) => {
  const ns = toolPlan(req).namespaced.get(chatName);
  return {
    id: `fc_${base}_${i}`,
    type: 'function_call' as const,
    status,
    call_id: callId,
    name: ns ? ns.name : chatName,
    ...(ns ? { namespace: ns.namespace } : {}),
    arguments: args,
  };
};

export function responsesFromChat(resp: ChatResponse, req: ResponsesRequest) {
  const base = idBase(resp.id);
  const choice = resp.choices?.[0];
  const msg = (choice?.message ?? {}) as ChatResponse['choices'][number]['message'];
  const incomplete = choice?.finish_reason === 'length';
  // cut by max tokens: only the item being generated at the cut is incomplete (as when streamed)
  const itemStatus = (last: boolean) => (incomplete && last ? 'incomplete' : 'completed');
  const output: unknown[] = [];
  const reasoning = reasoningOf(msg);
  if (reasoning) output.push(reasoningItem(base, reasoning));
  const calls = (msg.tool_calls ?? []).filter((t) => t.type === 'function');
  if (msg.content || !calls.length)
    output.push(messageItem(base, msg.content ?? '', itemStatus(!calls.length)));
  calls.forEach((t, i) => {
    output.push(
      callItem(
        req,
        base,
        i,
        t.id || newId('call_'),
        t.function.name,
        t.function.arguments ?? '',
        itemStatus(i === calls.length - 1),
      ),
    );
  });
  const u = usageOf(resp);
  return responseObject(
    req,
    base,
    resp.created ?? Math.floor(Date.now() / 1000),
    incomplete ? 'incomplete' : 'completed',
    output,
    u ? { input: u.prompt_tokens, output: u.completion_tokens, cached: u.cached_tokens } : null,
  );
}
