// A wire API the proxy speaks to harnesses but not to backends (Responses, Anthropic Messages):
// translated to Chat Completions on the way in and back on the way out, streaming included.
import type OpenAI from 'openai';

export type ChatRequest = OpenAI.Chat.ChatCompletionCreateParams & Record<string, unknown>;
export type ChatResponse = OpenAI.Chat.ChatCompletion & Record<string, unknown>;
export type ChatChunk = OpenAI.Chat.ChatCompletionChunk & Record<string, unknown>;

export interface WireStream {
  /** SSE frames (each a complete `event:…\ndata:…\n\n` or `data:…\n\n` string) for one backend chunk. */
  chunk(chunk: ChatChunk): string[];
  /** Frames that close the stream after the backend's last chunk. */
  end(): string[];
  /** Frames that report an error mid-stream in this wire format. */
  error(message: string): string[];
  /** The response as a non-streaming client would have received it (what gets recorded). */
  assembled(): unknown;
}

/** A tool of the request that does not reach the backend, and why. */
export interface LeftOutTool {
  /** Where it is in the request, e.g. `tools[8]`. */
  path: string;
  /** Its type (hosted tools) or name (`custom` tools; namespaced ones as `namespace.name`). */
  tool: string;
  reason: string;
}

export interface WireTranslator<Req = unknown> {
  wire: 'responses' | 'messages' | 'gemini';
  /** Validate the harness's request body; throws a ZodError naming the field. */
  parse(body: unknown): Req;
  isStream(req: Req): boolean;
  model(req: Req): string;
  toChat(req: Req): ChatRequest;
  /** Tools of the request that the backend does not get (hosted tools it cannot run). */
  leftOut?(req: Req): LeftOutTool[];
  fromChat(response: ChatResponse, req: Req): unknown;
  stream(req: Req): WireStream;
  /** An error body in this wire format, e.g. OpenAI `{error:{message,type,param,code}}`. */
  errorBody(status: number, message: string, field?: string | null): unknown;
}
