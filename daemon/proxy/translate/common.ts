// Small helpers shared by the wire translators (SSE framing, ids, reading vLLM's chat extras).

import { randomBytes } from 'node:crypto';
import { parseBoundedJson } from '../../api/body';
import type { ChatChunk, ChatResponse } from './types';

/** One SSE frame; `event` null gives a bare `data:` frame. */
export function sseFrame(event: string | null, data: unknown): string {
  const body = `data: ${JSON.stringify(data)}\n\n`;
  return event ? `event: ${event}\n${body}` : body;
}

/** A fresh id with the wire's prefix (`msg_`, `resp_`, `toolu_` …). */
export function newId(prefix: string): string {
  return prefix + randomBytes(12).toString('hex');
}

/** The reasoning text of a chat message or delta: vLLM calls it `reasoning_content` (older) or `reasoning`. */
export function reasoningOf(m: unknown): string | null {
  if (!m || typeof m !== 'object') return null;
  const r = m as { reasoning_content?: unknown; reasoning?: unknown };
  if (typeof r.reasoning_content === 'string') return r.reasoning_content;
  if (typeof r.reasoning === 'string') return r.reasoning;
  return null;
}

/** Parse tool-call arguments; a backend that emitted invalid JSON gives `{}` rather than a crash. */
export function parseArguments(args: string | undefined | null): Record<string, unknown> {
  if (!args || !args.trim()) return {};
  try {
    const v = parseBoundedJson(args);
    return v && typeof v === 'object' && !Array.isArray(v) ? v : { value: v };
  } catch {
    return {};
  }
}

export interface ChatUsage {
  prompt_tokens: number;
  completion_tokens: number;
  cached_tokens: number;
}

export function usageOf(x: ChatResponse | ChatChunk | { usage?: unknown }): ChatUsage | null {
  const u = (x as { usage?: Record<string, any> | null }).usage;
  if (!u) return null;
  return {
    prompt_tokens: Number(u.prompt_tokens ?? 0),
    completion_tokens: Number(u.completion_tokens ?? 0),
    cached_tokens: Number(u.prompt_tokens_details?.cached_tokens ?? 0),
  };
}

/** Accumulates a Chat Completions stream into the non-streaming response (used by tests and translators). */
export class ChatAccumulator {
  id = '';
  model = '';
  created = 0;
  content = '';
  reasoning = '';
  hasReasoning = false;
  toolCalls: { id: string; name: string; arguments: string }[] = [];
  finishReason: string | null = null;
  stopReason: unknown = null;
  usage: ChatUsage | null = null;
  promptTokenIds: number[] | null = null;

  add(chunk: ChatChunk): void {
    if (chunk.id && !this.id) this.id = chunk.id;
    if (chunk.model && !this.model) this.model = chunk.model;
    if (chunk.created && !this.created) this.created = chunk.created;
    const u = usageOf(chunk);
    if (u) this.usage = u;
    if (Array.isArray(chunk.prompt_token_ids) && !this.promptTokenIds)
      this.promptTokenIds = chunk.prompt_token_ids as number[];
    const choice = chunk.choices?.[0];
    if (!choice) return;
    const d = choice.delta ?? {};
    const r = reasoningOf(d);
    if (r) {
      this.reasoning += r;
      this.hasReasoning = true;
    }
    if (d.content) this.content += d.content;
    for (const tc of d.tool_calls ?? []) {
      const i = tc.index ?? this.toolCalls.length;
      if (!this.toolCalls[i]) this.toolCalls[i] = { id: '', name: '', arguments: '' };
      const slot = this.toolCalls[i];
      if (tc.id) slot.id = tc.id;
      if (tc.function?.name) slot.name += tc.function.name;
      if (tc.function?.arguments) slot.arguments += tc.function.arguments;
    }
    if (choice.finish_reason) this.finishReason = choice.finish_reason;
    const sr = (choice as { stop_reason?: unknown }).stop_reason;
    if (sr !== undefined && sr !== null) this.stopReason = sr;
  }

  response(): ChatResponse {
    const message: Record<string, unknown> = { role: 'assistant', content: this.content || null };
    if (this.hasReasoning) message.reasoning_content = this.reasoning;
    if (this.toolCalls.length)
      message.tool_calls = this.toolCalls.map((t) => ({
        id: t.id,
        type: 'function',
        function: { name: t.name, arguments: t.arguments },
      }));
    const u = this.usage;
    return {
      id: this.id,
      object: 'chat.completion',
      created: this.created,
      model: this.model,
      choices: [
        {
          index: 0,
          message,
          finish_reason: this.finishReason ?? 'stop',
          stop_reason: this.stopReason,
          logprobs: null,
        },
      ],
      usage: u
        ? {
            prompt_tokens: u.prompt_tokens,
            completion_tokens: u.completion_tokens,
            total_tokens: u.prompt_tokens + u.completion_tokens,
          }
        : undefined,
    } as unknown as ChatResponse;
  }
}
