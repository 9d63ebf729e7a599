// The protocol half of the VS Code language model provider (lm.ts), with no vscode import so it is
// tested against a real daemon: VS Code chat messages (1.104+ `LanguageModelChatRequestMessage`,
// parts recognised by shape) → an OpenAI Chat Completions request to the daemon's unscoped proxy
// `/v1` (the active recording), its SSE stream → text pieces and complete tool calls. The models it
// offers and their token counts are in lmModels.ts.
import { z } from 'zod';
import { readReply, restFetch } from '../../daemon/api/rest-call';
import { SseParser } from '../../daemon/proxy/sse';

/** Where the proxy is and the daemon token (`DaemonClient.baseUrl` / `.token`). */
export interface ProxyConnection {
  baseUrl: string;
  token: string;
}

/** `vscode.LanguageModelChatMessageRole` (System is a proposal; treated as a system message). */
export const ChatRole = { User: 1, Assistant: 2, System: 3 } as const;
/** `vscode.LanguageModelChatToolMode`. */
export const ToolMode = { Auto: 1, Required: 2 } as const;

/** A request message as VS Code hands it to the provider; parts are class instances there, plain objects here. */
export interface ChatMessageLike {
  readonly role: number;
  readonly content: ReadonlyArray<unknown>;
  readonly name?: string | undefined;
}
export interface ChatToolLike {
  readonly name: string;
  readonly description?: string;
  readonly inputSchema?: object | undefined;
}
/** `ProvideLanguageModelChatResponseOptions`. */
export interface ChatOptionsLike {
  readonly tools?: readonly ChatToolLike[];
  readonly toolMode?: number;
  readonly modelOptions?: { readonly [name: string]: unknown };
}

/** `LanguageModelChatInformation` as the provider offers it. */
export interface ChatModelInformation {
  id: string;
  name: string;
  family: string;
  version: string;
  tooltip: string;
  maxInputTokens: number;
  maxOutputTokens: number;
  capabilities: { toolCalling: boolean; imageInput: boolean };
}

/** What the stream yields; lm.ts turns them into LanguageModelTextPart / LanguageModelToolCallPart. */
export type ResponsePart =
  | { type: 'text'; value: string }
  | { type: 'tool_call'; callId: string; name: string; input: object };

/** A refusal or failure the proxy reported (HTTP error or an SSE error frame). */
export class ProxyChatError extends Error {
  constructor(
    message: string,
    readonly status: number | null,
    readonly code: string | null = null,
  ) {
    super(message);
    this.name = 'ProxyChatError';
  }
}

// ---------- parts, recognised by shape ----------

type TextPart = { value: string };
type ToolCallPart = { callId: string; name: string; input: unknown };
type ToolResultPart = { callId: string; content: readonly unknown[] };
type DataPart = { mimeType: string; data: Uint8Array };

const isObj = (p: unknown): p is Record<string, unknown> => typeof p === 'object' && p !== null;
const isToolCall = (p: unknown): p is ToolCallPart =>
  isObj(p) && typeof p.callId === 'string' && typeof p.name === 'string' && 'input' in p;
const isToolResult = (p: unknown): p is ToolResultPart =>
  isObj(p) && typeof p.callId === 'string' && Array.isArray(p.content);
const isText = (p: unknown): p is TextPart => isObj(p) && typeof p.value === 'string';
const isData = (p: unknown): p is DataPart =>
  isObj(p) && typeof p.mimeType === 'string' && p.data instanceof Uint8Array;

/** Text-like data parts (text/*, JSON) are decoded; images and markers (e.g. cache_control) are dropped. */
function dataText(p: DataPart): string | null {
  const mime = p.mimeType.toLowerCase();
  if (mime.startsWith('text/') || mime === 'application/json' || mime.endsWith('+json'))
    return new TextDecoder().decode(p.data);
  return null;
}

/** The text of a tool result's content: text parts, text-like data, anything else as JSON. */
function toolResultText(content: readonly unknown[]): string {
  let out = '';
  for (const c of content) {
    if (isText(c)) out += c.value;
    else if (isData(c)) out += dataText(c) ?? '';
    else if (isObj(c) && 'value' in c)
      out += JSON.stringify(c.value) ?? ''; // a prompt-tsx part
    else if (typeof c === 'string') out += c;
  }
  return out;
}

/** Everything a message says, as plain text (token counting). */
export function messageText(m: ChatMessageLike | string): string {
  if (typeof m === 'string') return m;
  let out = '';
  for (const p of m.content) {
    if (isToolCall(p)) out += `${p.name}${JSON.stringify(p.input ?? {})}`;
    else if (isToolResult(p)) out += toolResultText(p.content);
    else if (isText(p)) out += p.value;
    else if (isData(p)) out += dataText(p) ?? '';
  }
  return out;
}

// ---------- request ----------

export type OpenAiMessage =
  | { role: 'system' | 'user'; content: string }
  | {
      role: 'assistant';
      content: string | null;
      tool_calls?: { id: string; type: 'function'; function: { name: string; arguments: string } }[];
    }
  | { role: 'tool'; tool_call_id: string; content: string };

export interface ChatCompletionRequest {
  model: string;
  messages: OpenAiMessage[];
  stream: true;
  stream_options: { include_usage: true };
  tools?: { type: 'function'; function: { name: string; description?: string; parameters: object } }[];
  tool_choice?: 'auto' | 'required';
  max_tokens?: number;
  temperature?: number;
  top_p?: number;
  stop?: string | string[];
}

/**
 * VS Code messages → OpenAI chat messages. An assistant message's tool call parts become its
 * `tool_calls`; a user message's tool result parts become `tool` messages placed before the user's
 * own text (OpenAI wants them right after the assistant turn that called the tools).
 */
export function toOpenAiMessages(messages: readonly ChatMessageLike[]): OpenAiMessage[] {
  const out: OpenAiMessage[] = [];
  for (const m of messages) {
    let text = '';
    const calls: ToolCallPart[] = [];
    const results: ToolResultPart[] = [];
    for (const p of m.content) {
      if (isToolCall(p)) calls.push(p);
      else if (isToolResult(p)) results.push(p);
      else if (isText(p)) text += p.value;
      else if (isData(p)) text += dataText(p) ?? '';
    }
    if (m.role === ChatRole.Assistant) {
      if (!text && calls.length === 0) continue;
      out.push({
        role: 'assistant',
        content: text || (calls.length > 0 ? null : ''),
        ...(calls.length > 0
          ? {
              tool_calls: calls.map((c) => ({
                id: c.callId,
                type: 'function' as const,
                function: { name: c.name, arguments: JSON.stringify(c.input ?? {}) },
              })),
            }
          : {}),
      });
      continue;
    }
    for (const r of results)
      out.push({ role: 'tool', tool_call_id: r.callId, content: toolResultText(r.content) });
    if (text || results.length === 0)
      out.push({ role: m.role === ChatRole.System ? 'system' : 'user', content: text });
  }
  return out;
}

/** The whole streamed Chat Completions request for one provideLanguageModelChatResponse. */
export function toChatRequest(
  model: string,
  messages: readonly ChatMessageLike[],
  options: ChatOptionsLike = {},
): ChatCompletionRequest {
  const req: ChatCompletionRequest = {
    model,
    messages: toOpenAiMessages(messages),
    stream: true,
    stream_options: { include_usage: true },
  };
  const tools = options.tools ?? [];
  if (tools.length > 0) {
    req.tools = tools.map((t) => ({
      type: 'function',
      function: {
        name: t.name,
        ...(t.description ? { description: t.description } : {}),
        parameters: t.inputSchema ?? { type: 'object', properties: {} },
      },
    }));
    req.tool_choice = options.toolMode === ToolMode.Required ? 'required' : 'auto';
  }
  const mo = options.modelOptions ?? {};
  const positiveInt = (v: unknown) => (Number.isInteger(v) && (v as number) > 0 ? (v as number) : undefined);
  const num = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);
  const maxTokens = positiveInt(mo.max_tokens) ?? positiveInt(mo.maxTokens);
  if (maxTokens !== undefined) req.max_tokens = maxTokens;
  if (num(mo.temperature) !== undefined) req.temperature = num(mo.temperature);
  if (num(mo.top_p) !== undefined) req.top_p = num(mo.top_p);
  if (typeof mo.stop === 'string' || (Array.isArray(mo.stop) && mo.stop.every((s) => typeof s === 'string')))
    req.stop = mo.stop as string | string[];
  return req;
}

// ---------- response ----------

const ErrorBody = z.object({
  error: z.object({ message: z.string(), code: z.string().nullish(), type: z.string().nullish() }),
});

const Chunk = z.looseObject({
  choices: z
    .array(
      z.looseObject({
        index: z.number().int().nullish(),
        delta: z
          .looseObject({
            content: z.string().nullish(),
            tool_calls: z
              .array(
                z.looseObject({
                  index: z.number().int().nullish(),
                  id: z.string().nullish(),
                  function: z
                    .looseObject({ name: z.string().nullish(), arguments: z.string().nullish() })
                    .nullish(),
                }),
              )
              .nullish(),
          })
          .nullish(),
      }),
    )
    .nullish(),
});

/** The user-facing text of a proxy refusal; "no active recording" says how to start one. */
function refusalMessage(model: string, message: string, code: string | null): string {
  if (code === 'no_active_recording')
    return `No active recording: run "Harness RL: Start Recording" to chat with ${model}. Chats with the model being trained go through the Harness RL proxy and are recorded into the active recording.`;
  return message;
}

async function proxyError(res: Response, model: string): Promise<ProxyChatError> {
  const { text, json } = await readReply(res).catch(() => ({ text: '', json: null }));
  let message = text.trim().slice(0, 500) || `HTTP ${res.status}`;
  let code: string | null = null;
  const parsed = ErrorBody.safeParse(json);
  if (parsed.success) {
    message = parsed.data.error.message;
    code = parsed.data.error.code ?? null;
  }
  return new ProxyChatError(
    `The Harness RL proxy refused the chat (HTTP ${res.status}): ${refusalMessage(model, message, code)}`,
    res.status,
    code,
  );
}

/**
 * Reads a Chat Completions SSE stream: yields text deltas as they come and each tool call once it
 * is complete (argument deltas joined by index, parsed as JSON at the end). An error frame, an
 * unreadable frame, tool arguments that are not a JSON object, or a stream that ends without
 * `[DONE]` throw.
 */
export async function* readChatStream(body: AsyncIterable<Uint8Array>): AsyncGenerator<ResponsePart> {
  const parser = new SseParser();
  const calls = new Map<number, { id: string; name: string; args: string }>();
  let done = false;
  const handle = function* (data: string): Generator<ResponsePart> {
    if (data.trim() === '[DONE]') {
      done = true;
      return;
    }
    let json: unknown;
    try {
      json = JSON.parse(data);
    } catch {
      throw new ProxyChatError(`the proxy sent an unreadable stream event: ${data.slice(0, 200)}`, null);
    }
    const err = ErrorBody.safeParse(json);
    if (err.success)
      throw new ProxyChatError(
        `The model's answer failed: ${err.data.error.message}`,
        null,
        err.data.error.code,
      );
    const chunk = Chunk.safeParse(json);
    if (!chunk.success) return; // a frame of another shape (e.g. a keep-alive): nothing to show
    for (const choice of chunk.data.choices ?? []) {
      if ((choice.index ?? 0) !== 0) continue;
      const delta = choice.delta;
      if (delta?.content) yield { type: 'text', value: delta.content };
      for (const tc of delta?.tool_calls ?? []) {
        const index = tc.index ?? 0;
        const acc = calls.get(index) ?? { id: '', name: '', args: '' };
        if (tc.id) acc.id = tc.id;
        if (tc.function?.name && !acc.name) acc.name = tc.function.name;
        if (tc.function?.arguments) acc.args += tc.function.arguments;
        calls.set(index, acc);
      }
    }
  };
  for await (const bytes of body) {
    for (const ev of parser.push(bytes)) {
      yield* handle(ev.data);
      if (done) break;
    }
    if (done) break;
  }
  if (!done) for (const ev of parser.flush()) yield* handle(ev.data);
  if (!done) throw new ProxyChatError('the stream from the proxy ended before the answer was complete', null);
  for (const [index, c] of [...calls].sort((a, b) => a[0] - b[0])) {
    const name = c.name || 'unknown';
    let input: unknown;
    try {
      input = c.args.trim() === '' ? {} : JSON.parse(c.args);
    } catch (e) {
      throw new ProxyChatError(
        `the model called tool "${name}" with arguments that are not valid JSON (${(e as Error).message}): ${c.args.slice(0, 200)}`,
        null,
      );
    }
    if (!isObj(input) || Array.isArray(input))
      throw new ProxyChatError(
        `the model called tool "${name}" with arguments that are not a JSON object: ${c.args.slice(0, 200)}`,
        null,
      );
    yield { type: 'tool_call', callId: c.id || `call_${index}`, name, input };
  }
}

/**
 * One streamed chat through the daemon's unscoped proxy (`POST /v1/chat/completions` with the
 * daemon token, recorded into the active recording). Aborting `signal` closes the connection, so
 * the proxy records the call as cancelled; the generator then throws the abort error.
 */
export async function* streamChat(
  conn: ProxyConnection,
  request: ChatCompletionRequest,
  signal?: AbortSignal,
): AsyncGenerator<ResponsePart> {
  let res: Response;
  try {
    res = await restFetch(
      new URL('/v1/chat/completions', conn.baseUrl).href,
      'POST',
      conn.token,
      request,
      signal,
    );
  } catch (e) {
    if (signal?.aborted) throw e;
    throw new ProxyChatError(`cannot reach the Harness RL daemon at ${conn.baseUrl}: ${String(e)}`, null);
  }
  if (!res.ok) throw await proxyError(res, request.model);
  if (!res.body) throw new ProxyChatError('the proxy answered without a body', res.status);
  yield* readChatStream(res.body as unknown as AsyncIterable<Uint8Array>);
}
