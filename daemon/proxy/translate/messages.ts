// Anthropic Messages (`/v1/messages`) ⇄ Chat Completions (vLLM flavour).
import { z } from 'zod';
import { newId, parseArguments, reasoningOf, sseFrame, usageOf } from './common';
import type { ChatChunk, ChatRequest, ChatResponse, LeftOutTool, WireStream, WireTranslator } from './types';

// ---------- request schema ----------

const unsupported = (what: string) =>
  z
    .object({ type: z.literal(what) })
    .loose()
    .check((ctx) => {
      ctx.issues.push({
        code: 'custom',
        message: `${what} content is not supported by this proxy (text-only models); remove the ${what} block`,
        input: ctx.value,
      });
    });

const cacheControl = z.unknown().optional();
/** String content is shorthand for one text block; normalising first lets zod name the failing block. */
const blocks = <T extends z.ZodType>(block: T) =>
  z.preprocess((v) => (typeof v === 'string' ? [{ type: 'text', text: v }] : v), z.array(block));

const TextBlock = z.object({
  type: z.literal('text'),
  text: z.string(),
  cache_control: cacheControl,
  citations: z.unknown().optional(),
});
const ToolUseBlock = z.object({
  type: z.literal('tool_use'),
  id: z.string(),
  name: z.string(),
  input: z.record(z.string(), z.unknown()),
  cache_control: cacheControl,
});
const ToolResultBlock = z.object({
  type: z.literal('tool_result'),
  tool_use_id: z.string(),
  content: blocks(
    z.discriminatedUnion('type', [TextBlock, unsupported('image'), unsupported('document')]),
  ).optional(),
  is_error: z.boolean().optional(),
  cache_control: cacheControl,
});
const ThinkingBlock = z.object({
  type: z.literal('thinking'),
  thinking: z.string(),
  signature: z.string().optional(),
});
const RedactedThinkingBlock = z.object({ type: z.literal('redacted_thinking'), data: z.string() });

const ContentBlock = z.discriminatedUnion('type', [
  TextBlock,
  ToolUseBlock,
  ToolResultBlock,
  ThinkingBlock,
  RedactedThinkingBlock,
  unsupported('image'),
  unsupported('document'),
]);

const MessageParam = z.object({
  role: z.enum(['user', 'assistant', 'system']),
  content: blocks(ContentBlock),
});

const CustomTool = z.object({
  type: z.literal('custom'),
  name: z.string().min(1),
  description: z.string().optional(),
  input_schema: z.record(z.string(), z.unknown()),
  cache_control: cacheControl,
});
/** A server tool (web_search_20250305, code_execution …), kept whole: it is left out of the backend request. */
const ServerTool = z.object({ type: z.literal('server'), tool: z.record(z.string(), z.unknown()) });
const Tool = z.preprocess(
  (v) => {
    if (!v || typeof v !== 'object') return v;
    const type = (v as { type?: unknown }).type;
    if (type === undefined) return { ...v, type: 'custom' };
    return typeof type === 'string' && type !== 'custom' ? { type: 'server', tool: v } : v;
  },
  z.discriminatedUnion('type', [ServerTool, CustomTool]),
) as unknown as z.ZodDiscriminatedUnion<[typeof ServerTool, typeof CustomTool]>;

const SERVER = "server tool: it runs on Anthropic's side, and the inference backend cannot run it";

/** The server tools of a request, which the backend does not get. */
export function messagesLeftOut(req: CountTokensRequest): LeftOutTool[] {
  const out: LeftOutTool[] = [];
  (req.tools ?? []).forEach((t, i) => {
    if (t.type === 'server') out.push({ path: `tools[${i}]`, tool: String(t.tool.type), reason: SERVER });
  });
  return out;
}

const ToolChoice = z.discriminatedUnion('type', [
  z.object({ type: z.literal('auto'), disable_parallel_tool_use: z.boolean().optional() }),
  z.object({ type: z.literal('any'), disable_parallel_tool_use: z.boolean().optional() }),
  z.object({ type: z.literal('tool'), name: z.string(), disable_parallel_tool_use: z.boolean().optional() }),
  z.object({ type: z.literal('none') }),
]);

const base = {
  model: z.string().min(1),
  system: z.union([z.string(), z.array(TextBlock)]).optional(),
  messages: z.array(MessageParam).min(1, { error: 'messages: at least one message is required' }),
  tools: z.array(Tool).optional(),
  tool_choice: ToolChoice.optional(),
  stop_sequences: z.array(z.string()).optional(),
  // Anthropic's ranges: temperature 0–1, top_p 0–1, top_k a count.
  temperature: z.number().min(0).max(1).optional(),
  top_p: z.number().min(0).max(1).optional(),
  top_k: z.number().int().min(0).optional(),
  stream: z.boolean().optional(),
  metadata: z.object({ user_id: z.string().nullish() }).loose().optional(),
  thinking: z
    .union([
      z.object({ type: z.literal('enabled'), budget_tokens: z.number().int().optional() }).loose(),
      z.object({ type: z.enum(['disabled', 'adaptive']) }).loose(),
    ])
    .optional(),
};

export const MessagesRequest = z.object({ ...base, max_tokens: z.number().int().positive() });
export type MessagesRequest = z.infer<typeof MessagesRequest>;
/** `/v1/messages/count_tokens` takes the same body without `max_tokens`. */
export const CountTokensRequest = z.object({ ...base, max_tokens: z.number().int().positive().optional() });
export type CountTokensRequest = z.infer<typeof CountTokensRequest>;

// ---------- request → chat ----------

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

// ---------- chat → response ----------

type StopReason = 'end_turn' | 'max_tokens' | 'stop_sequence' | 'tool_use';

function stopReasonOf(
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

function usageBlock(input: number, output: number, cached: number) {
  return {
    input_tokens: input,
    output_tokens: output,
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: cached,
  };
}

function messageId(chatId: string | undefined): string {
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

// ---------- streaming ----------

type Block =
  | { type: 'thinking'; thinking: string }
  | { type: 'text'; text: string }
  | { type: 'tool_use'; id: string; name: string; json: string; toolIndex: number };

class MessagesStream implements WireStream {
  private started = false;
  private ended = false;
  private blocks: Block[] = [];
  private open = -1; // index of the open content block
  private toolBlock = new Map<number, number>(); // chat tool_calls index → block index
  private finish: string | null = null;
  private vllmStop: unknown = null;
  private inputTokens = 0;
  private outputTokens = 0;
  private cached = 0;
  private id = '';

  constructor(private req: MessagesRequest) {}

  private start(chunk?: ChatChunk): string[] {
    if (this.started) return [];
    this.started = true;
    this.id = messageId(chunk?.id);
    const ptids = chunk?.prompt_token_ids;
    if (Array.isArray(ptids)) this.inputTokens = ptids.length;
    return [
      sseFrame('message_start', {
        type: 'message_start',
        message: {
          id: this.id,
          type: 'message',
          role: 'assistant',
          model: this.req.model,
          content: [],
          stop_reason: null,
          stop_sequence: null,
          usage: usageBlock(this.inputTokens, 0, 0),
        },
      }),
      sseFrame('ping', { type: 'ping' }),
    ];
  }

  private close(): string[] {
    if (this.open < 0) return [];
    const index = this.open;
    this.open = -1;
    return [sseFrame('content_block_stop', { type: 'content_block_stop', index })];
  }

  private openBlock(b: Block): string[] {
    const frames = this.close();
    this.blocks.push(b);
    const index = this.blocks.length - 1;
    this.open = index;
    const content_block =
      b.type === 'thinking'
        ? { type: 'thinking', thinking: '', signature: '' }
        : b.type === 'text'
          ? { type: 'text', text: '' }
          : { type: 'tool_use', id: b.id, name: b.name, input: {} };
    frames.push(sseFrame('content_block_start', { type: 'content_block_start', index, content_block }));
    return frames;
  }

  private delta(index: number, delta: Record<string, unknown>): string {
    return sseFrame('content_block_delta', { type: 'content_block_delta', index, delta });
  }

  chunk(chunk: ChatChunk): string[] {
    if (this.ended) return [];
    const frames = this.start(chunk);
    const u = usageOf(chunk);
    if (u) {
      this.inputTokens = u.prompt_tokens;
      this.outputTokens = u.completion_tokens;
      this.cached = u.cached_tokens;
    }
    const choice = chunk.choices?.[0];
    if (!choice) return frames;
    const d = choice.delta ?? {};
    const reasoning = reasoningOf(d);
    if (reasoning) {
      if (this.blocks[this.open]?.type !== 'thinking')
        frames.push(...this.openBlock({ type: 'thinking', thinking: '' }));
      (this.blocks[this.open] as { thinking: string }).thinking += reasoning;
      frames.push(this.delta(this.open, { type: 'thinking_delta', thinking: reasoning }));
    }
    if (d.content) {
      if (this.blocks[this.open]?.type !== 'text') frames.push(...this.openBlock({ type: 'text', text: '' }));
      (this.blocks[this.open] as { text: string }).text += d.content;
      frames.push(this.delta(this.open, { type: 'text_delta', text: d.content }));
    }
    for (const tc of d.tool_calls ?? []) {
      const ti = tc.index ?? 0;
      let bi = this.toolBlock.get(ti);
      if (bi === undefined) {
        frames.push(
          ...this.openBlock({
            type: 'tool_use',
            id: tc.id || newId('toolu_'),
            name: tc.function?.name ?? '',
            json: '',
            toolIndex: ti,
          }),
        );
        bi = this.open;
        this.toolBlock.set(ti, bi);
      }
      const args = tc.function?.arguments;
      if (args) {
        (this.blocks[bi] as { json: string }).json += args;
        frames.push(this.delta(bi, { type: 'input_json_delta', partial_json: args }));
      }
    }
    if (choice.finish_reason) this.finish = choice.finish_reason;
    const sr = (choice as { stop_reason?: unknown }).stop_reason;
    if (sr !== undefined && sr !== null) this.vllmStop = sr;
    return frames;
  }

  private stop() {
    return stopReasonOf(
      this.finish,
      this.vllmStop,
      this.blocks.some((b) => b.type === 'tool_use'),
      this.req,
    );
  }

  end(): string[] {
    if (this.ended) return [];
    const frames = this.start();
    frames.push(...this.close());
    this.ended = true;
    frames.push(
      sseFrame('message_delta', {
        type: 'message_delta',
        delta: this.stop(),
        usage: {
          input_tokens: this.inputTokens,
          output_tokens: this.outputTokens,
          cache_creation_input_tokens: 0,
          cache_read_input_tokens: this.cached,
        },
      }),
      sseFrame('message_stop', { type: 'message_stop' }),
    );
    return frames;
  }

  error(message: string): string[] {
    this.ended = true;
    return [sseFrame('error', { type: 'error', error: { type: 'api_error', message } })];
  }

  assembled() {
    return {
      id: this.id || newId('msg_'),
      type: 'message' as const,
      role: 'assistant' as const,
      model: this.req.model,
      content: this.blocks.map((b) =>
        b.type === 'thinking'
          ? { type: 'thinking', thinking: b.thinking, signature: '' }
          : b.type === 'text'
            ? { type: 'text', text: b.text }
            : { type: 'tool_use', id: b.id, name: b.name, input: parseArguments(b.json) },
      ),
      ...this.stop(),
      usage: usageBlock(this.inputTokens, this.outputTokens, this.cached),
    };
  }
}

// ---------- errors, count_tokens, the translator ----------

const errorTypes: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  402: 'billing_error',
  403: 'permission_error',
  404: 'not_found_error',
  408: 'timeout_error',
  413: 'request_too_large',
  422: 'invalid_request_error',
  429: 'rate_limit_error',
  529: 'overloaded_error',
};

export function messagesErrorBody(status: number, message: string, field?: string | null) {
  const type = errorTypes[status] ?? (status >= 500 ? 'api_error' : 'invalid_request_error');
  return {
    type: 'error',
    error: { type, message: field && !message.includes(field) ? `${field}: ${message}` : message },
  };
}

/** `/v1/messages/count_tokens`: validates the body (throws ZodError), renders it as chat, counts with the backend's tokenizer. */
export async function countTokens(
  body: unknown,
  tokenize: (chatRequest: ChatRequest) => Promise<number>,
): Promise<{ input_tokens: number }> {
  const req = CountTokensRequest.parse(body);
  const chat = messagesToChat({ ...req, stream: false });
  return { input_tokens: await tokenize(chat) };
}

export const messagesTranslator: WireTranslator<MessagesRequest> = {
  wire: 'messages',
  parse: (body) => MessagesRequest.parse(body),
  isStream: (req) => req.stream === true,
  model: (req) => req.model,
  toChat: messagesToChat,
  leftOut: messagesLeftOut,
  fromChat: messagesFromChat,
  stream: (req) => new MessagesStream(req),
  errorBody: messagesErrorBody,
};
