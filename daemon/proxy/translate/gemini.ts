// Google Gemini (`/v1beta/models/<model>:generateContent`, `:streamGenerateContent?alt=sse`) ⇄ Chat
// Completions (vLLM flavour). The model and whether to stream come from the URL: the proxy hands the
// translator the body with both added (`{...body, model, stream}`).
import { z } from 'zod';
import { newId, parseArguments, reasoningOf, sseFrame, usageOf } from './common';
import type { ChatChunk, ChatRequest, ChatResponse, LeftOutTool, WireStream, WireTranslator } from './types';

// ---------- request schema ----------

const media = (what: string) =>
  z
    .unknown()
    .optional()
    .check((ctx) => {
      if (ctx.value === undefined) return;
      ctx.issues.push({
        code: 'custom',
        message: `${what} parts are not supported by this proxy (text-only models)`,
        input: ctx.value,
      });
    });

const Part = z
  .object({
    text: z.string().optional(),
    thought: z.boolean().optional(),
    thoughtSignature: z.string().optional(),
    functionCall: z
      .object({
        name: z.string().min(1),
        args: z.record(z.string(), z.unknown()).nullish(),
        id: z.string().nullish(),
      })
      .optional(),
    functionResponse: z
      .object({
        name: z.string().min(1),
        response: z.record(z.string(), z.unknown()).nullish(),
        id: z.string().nullish(),
      })
      .optional(),
    inlineData: media('inlineData'),
    fileData: media('fileData'),
    executableCode: media('executableCode'),
    codeExecutionResult: media('codeExecutionResult'),
  })
  .loose();
type PartT = z.infer<typeof Part>;

const Content = z.object({ role: z.enum(['user', 'model', 'function']).optional(), parts: z.array(Part) });

const FunctionDeclaration = z
  .object({
    name: z.string().min(1),
    description: z.string().nullish(),
    parameters: z.record(z.string(), z.unknown()).nullish(),
    parametersJsonSchema: z.record(z.string(), z.unknown()).nullish(),
  })
  .loose();

/** One `tools` entry: function declarations, and/or hosted tools (googleSearch, codeExecution …). */
const Tool = z.object({ functionDeclarations: z.array(FunctionDeclaration).optional() }).loose();

export const GeminiRequest = z.object({
  model: z.string().min(1),
  stream: z.boolean(),
  contents: z.preprocess(
    (v) => (v && !Array.isArray(v) ? [v] : v),
    z.array(Content).min(1, { error: 'contents: at least one content is required' }),
  ) as unknown as z.ZodArray<typeof Content>,
  systemInstruction: z
    .preprocess(
      (v) => (typeof v === 'string' ? { parts: [{ text: v }] } : v),
      Content.partial({ role: true }),
    )
    .optional(),
  tools: z.array(Tool).optional(),
  toolConfig: z
    .object({
      functionCallingConfig: z
        .object({
          mode: z.enum(['MODE_UNSPECIFIED', 'AUTO', 'ANY', 'NONE', 'VALIDATED']).optional(),
          allowedFunctionNames: z.array(z.string()).optional(),
        })
        .optional(),
    })
    .loose()
    .optional(),
  generationConfig: z
    .object({
      temperature: z.number().min(0).max(2).nullish(),
      topP: z.number().min(0).max(1).nullish(),
      topK: z.number().int().min(0).nullish(),
      maxOutputTokens: z.number().int().positive().nullish(),
      stopSequences: z.array(z.string()).nullish(),
      candidateCount: z
        .literal(1, { error: 'candidateCount: this proxy answers with one candidate' })
        .nullish(),
      seed: z.number().int().nullish(),
      presencePenalty: z.number().nullish(),
      frequencyPenalty: z.number().nullish(),
      responseMimeType: z.string().nullish(),
      responseJsonSchema: z.record(z.string(), z.unknown()).nullish(),
      thinkingConfig: z
        .object({ includeThoughts: z.boolean().nullish(), thinkingBudget: z.number().int().nullish() })
        .loose()
        .nullish(),
    })
    .loose()
    .optional(),
  // Checked as Google types them, then not applied (the backend has no safety filters).
  safetySettings: z.array(z.object({ category: z.string(), threshold: z.string() }).loose()).optional(),
  cachedContent: z.null({ error: 'cachedContent is not supported: send the whole conversation' }).optional(),
});
export type GeminiRequest = z.infer<typeof GeminiRequest>;

// ---------- request → chat ----------

/** Gemini's OpenAPI-style schema (`type: "OBJECT"`) as JSON Schema (`type: "object"`). */
function jsonSchema(s: unknown): unknown {
  if (Array.isArray(s)) return s.map(jsonSchema);
  if (!s || typeof s !== 'object') return s;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(s)) {
    if (k === 'type' && typeof v === 'string') out[k] = v.toLowerCase();
    else if (k === 'properties' && v && typeof v === 'object')
      out[k] = Object.fromEntries(Object.entries(v).map(([p, ps]) => [p, jsonSchema(ps)]));
    else if (k === 'items' || k === 'anyOf' || k === 'additionalProperties') out[k] = jsonSchema(v);
    else out[k] = v;
  }
  return out;
}

type ChatMessage = Record<string, unknown>;

/** Text parts join as Gemini joins them: directly (a streamed turn comes back in many parts). */
const textOf = (parts: PartT[], thought: boolean) =>
  parts
    .filter((p) => typeof p.text === 'string' && (p.thought === true) === thought)
    .map((p) => p.text)
    .join('');

/** A function response as the tool message's text: Gemini CLI's `{output: "…"}` as that text. */
function responseText(r: Record<string, unknown> | null | undefined): string {
  if (!r) return '';
  const keys = Object.keys(r);
  if (keys.length === 1 && typeof r[keys[0]] === 'string' && (keys[0] === 'output' || keys[0] === 'content'))
    return r[keys[0]] as string;
  return JSON.stringify(r);
}

export function geminiToChatMessages(req: GeminiRequest): ChatMessage[] {
  const out: ChatMessage[] = [];
  const system = req.systemInstruction ? textOf(req.systemInstruction.parts, false) : '';
  if (system) out.push({ role: 'system', content: system });
  // calls without an id get one per position, and the responses that follow take them by name
  let open: { id: string; name: string }[] = [];
  req.contents.forEach((c, ci) => {
    if (c.role === 'model') {
      const calls = c.parts.filter((p) => p.functionCall);
      open = calls.map((p, k) => ({
        id: p.functionCall?.id || `call_${ci}_${k}`,
        name: p.functionCall?.name ?? '',
      }));
      const m: ChatMessage = { role: 'assistant', content: textOf(c.parts, false) };
      const reasoning = textOf(c.parts, true);
      if (reasoning) m.reasoning_content = reasoning;
      if (calls.length)
        m.tool_calls = calls.map((p, k) => ({
          id: open[k].id,
          type: 'function',
          function: { name: p.functionCall?.name, arguments: JSON.stringify(p.functionCall?.args ?? {}) },
        }));
      out.push(m);
      return;
    }
    let text = '';
    const flush = () => {
      if (text) out.push({ role: 'user', content: text });
      text = '';
    };
    for (const p of c.parts) {
      const fr = p.functionResponse;
      if (fr) {
        flush();
        const i = fr.id ? open.findIndex((o) => o.id === fr.id) : open.findIndex((o) => o.name === fr.name);
        const id = i >= 0 ? open[i].id : fr.id || `call_${ci}_${fr.name}`;
        if (i >= 0) open.splice(i, 1);
        out.push({ role: 'tool', tool_call_id: id, content: responseText(fr.response) });
      } else if (typeof p.text === 'string') text += p.text;
    }
    flush();
  });
  return out;
}

const HOSTED = "hosted tool: it runs on Google's side, and the inference backend cannot run it";

export function geminiLeftOut(req: GeminiRequest): LeftOutTool[] {
  const out: LeftOutTool[] = [];
  (req.tools ?? []).forEach((t, i) => {
    for (const k of Object.keys(t))
      if (k !== 'functionDeclarations') out.push({ path: `tools[${i}].${k}`, tool: k, reason: HOSTED });
  });
  return out;
}

export function geminiToChat(req: GeminiRequest): ChatRequest {
  const chat: Record<string, unknown> = { model: req.model, messages: geminiToChatMessages(req) };
  const decls = (req.tools ?? []).flatMap((t) => t.functionDeclarations ?? []);
  if (decls.length)
    chat.tools = decls.map((d) => ({
      type: 'function',
      function: {
        name: d.name,
        ...(d.description != null ? { description: d.description } : {}),
        parameters:
          d.parametersJsonSchema ??
          (d.parameters ? jsonSchema(d.parameters) : { type: 'object', properties: {} }),
      },
    }));
  const fc = req.toolConfig?.functionCallingConfig;
  if (fc?.mode === 'NONE') chat.tool_choice = 'none';
  else if (fc?.mode === 'ANY' || fc?.mode === 'VALIDATED')
    chat.tool_choice =
      fc.allowedFunctionNames?.length === 1
        ? { type: 'function', function: { name: fc.allowedFunctionNames[0] } }
        : 'required';
  const g = req.generationConfig;
  if (g?.maxOutputTokens != null) chat.max_tokens = g.maxOutputTokens;
  if (g?.temperature != null) chat.temperature = g.temperature;
  if (g?.topP != null) chat.top_p = g.topP;
  if (g?.topK != null) chat.top_k = g.topK;
  if (g?.stopSequences?.length) chat.stop = g.stopSequences;
  if (g?.seed != null) chat.seed = g.seed;
  if (g?.presencePenalty != null) chat.presence_penalty = g.presencePenalty;
  if (g?.frequencyPenalty != null) chat.frequency_penalty = g.frequencyPenalty;
  if (g?.responseMimeType === 'application/json')
    chat.response_format = g.responseJsonSchema
      ? { type: 'json_schema', json_schema: { name: 'response', schema: g.responseJsonSchema } }
      : { type: 'json_object' };
  if (g?.thinkingConfig?.thinkingBudget === 0) chat.chat_template_kwargs = { enable_thinking: false };
  if (req.stream) {
    chat.stream = true;
    chat.stream_options = { include_usage: true };
  }
  return chat as ChatRequest;
}

// ---------- chat → GenerateContentResponse ----------

function finishReason(finish: string | null | undefined): string {
  return finish === 'length' ? 'MAX_TOKENS' : 'STOP';
}

function usageMetadata(input: number, output: number, cached: number) {
  return {
    promptTokenCount: input,
    candidatesTokenCount: output,
    totalTokenCount: input + output,
    ...(cached ? { cachedContentTokenCount: cached } : {}),
  };
}

const responseId = (chatId: string | undefined) => chatId?.replace(/^chatcmpl-/, '') || newId('');

const callPart = (id: string, name: string, args: string) => ({
  functionCall: { id, name, args: parseArguments(args) },
});

export function geminiFromChat(resp: ChatResponse, req: GeminiRequest) {
  const choice = resp.choices?.[0];
  const msg = (choice?.message ?? {}) as ChatResponse['choices'][number]['message'];
  const parts: unknown[] = [];
  const reasoning = reasoningOf(msg);
  if (reasoning) parts.push({ text: reasoning, thought: true });
  if (msg.content) parts.push({ text: msg.content });
  for (const t of (msg.tool_calls ?? []).filter((t) => t.type === 'function'))
    parts.push(callPart(t.id || newId('call_'), t.function.name, t.function.arguments));
  const u = usageOf(resp);
  return {
    candidates: [
      { content: { role: 'model', parts }, finishReason: finishReason(choice?.finish_reason), index: 0 },
    ],
    usageMetadata: usageMetadata(u?.prompt_tokens ?? 0, u?.completion_tokens ?? 0, u?.cached_tokens ?? 0),
    modelVersion: req.model,
    responseId: responseId(resp.id),
  };
}

// ---------- streaming ----------

/**
 * Each backend chunk with text becomes one GenerateContentResponse with that text (thoughts as
 * `thought: true` parts); function calls go out whole, each in its own chunk, once their arguments are
 * complete; the last chunk carries finishReason and usageMetadata. `assembled()` is the
 * non-streaming response the same turn gives.
 */
class GeminiStream implements WireStream {
  private id = '';
  private ended = false;
  private reasoning = '';
  private text = '';
  private calls: { id: string; name: string; args: string; sent: boolean }[] = [];
  private finish: string | null = null;
  private usage = { input: 0, output: 0, cached: 0 };

  constructor(private req: GeminiRequest) {}

  private frame(parts: unknown[], last = false): string {
    return sseFrame(null, {
      candidates: [
        {
          content: { role: 'model', parts },
          ...(last ? { finishReason: finishReason(this.finish) } : {}),
          index: 0,
        },
      ],
      ...(last
        ? { usageMetadata: usageMetadata(this.usage.input, this.usage.output, this.usage.cached) }
        : {}),
      modelVersion: this.req.model,
      responseId: this.id,
    });
  }

  /** The function calls whose arguments are complete (all of them at the end), one frame each. */
  private flushCalls(all: boolean): string[] {
    const frames: string[] = [];
    this.calls.forEach((c, i) => {
      if (c.sent || (!all && i === this.calls.length - 1)) return;
      c.sent = true;
      frames.push(this.frame([callPart(c.id, c.name, c.args)]));
    });
    return frames;
  }

  chunk(chunk: ChatChunk): string[] {
    if (this.ended) return [];
    if (!this.id) this.id = responseId(chunk.id);
    const u = usageOf(chunk);
    if (u) this.usage = { input: u.prompt_tokens, output: u.completion_tokens, cached: u.cached_tokens };
    const choice = chunk.choices?.[0];
    if (!choice) return [];
    const frames: string[] = [];
    const d = choice.delta ?? {};
    const r = reasoningOf(d);
    if (r) {
      this.reasoning += r;
      frames.push(this.frame([{ text: r, thought: true }]));
    }
    if (d.content) {
      this.text += d.content;
      frames.push(this.frame([{ text: d.content }]));
    }
    for (const tc of d.tool_calls ?? []) {
      const i = tc.index ?? 0;
      if (!this.calls[i]) this.calls[i] = { id: tc.id || newId('call_'), name: '', args: '', sent: false };
      if (tc.function?.name) this.calls[i].name += tc.function.name;
      if (tc.function?.arguments) this.calls[i].args += tc.function.arguments;
    }
    frames.push(...this.flushCalls(false));
    if (choice.finish_reason) this.finish = choice.finish_reason;
    return frames;
  }

  end(): string[] {
    if (this.ended) return [];
    if (!this.id) this.id = newId('');
    const frames = this.flushCalls(true);
    this.ended = true;
    frames.push(this.frame([], true));
    return frames;
  }

  error(message: string): string[] {
    this.ended = true;
    return [sseFrame(null, geminiErrorBody(502, message))];
  }

  assembled() {
    const parts: unknown[] = [];
    if (this.reasoning) parts.push({ text: this.reasoning, thought: true });
    if (this.text) parts.push({ text: this.text });
    for (const c of this.calls) if (c) parts.push(callPart(c.id, c.name, c.args));
    return {
      candidates: [{ content: { role: 'model', parts }, finishReason: finishReason(this.finish), index: 0 }],
      usageMetadata: usageMetadata(this.usage.input, this.usage.output, this.usage.cached),
      modelVersion: this.req.model,
      responseId: this.id,
    };
  }
}

// ---------- errors, the translator ----------

const statuses: Record<number, string> = {
  400: 'INVALID_ARGUMENT',
  401: 'UNAUTHENTICATED',
  403: 'PERMISSION_DENIED',
  404: 'NOT_FOUND',
  409: 'ABORTED',
  413: 'INVALID_ARGUMENT',
  429: 'RESOURCE_EXHAUSTED',
  499: 'CANCELLED',
  501: 'UNIMPLEMENTED',
  503: 'UNAVAILABLE',
  504: 'DEADLINE_EXCEEDED',
};

/** Google's error body: `{error: {code, message, status}}`. */
export function geminiErrorBody(status: number, message: string, field?: string | null) {
  return {
    error: {
      code: status,
      message: field && !message.includes(field) ? `${field}: ${message}` : message,
      status: statuses[status] ?? (status >= 500 ? 'INTERNAL' : 'INVALID_ARGUMENT'),
    },
  };
}

/**
 * `:countTokens`: the body is `{contents, systemInstruction?, tools?}` or `{generateContentRequest}`;
 * counted as the backend's tokenizer renders the translated chat request. Throws a ZodError naming the field.
 */
export async function geminiCountTokens(
  model: string,
  body: unknown,
  tokenize: (chatRequest: ChatRequest) => Promise<number>,
): Promise<{ totalTokens: number }> {
  const b = (body && typeof body === 'object' ? body : {}) as Record<string, unknown>;
  const inner =
    b.generateContentRequest && typeof b.generateContentRequest === 'object' ? b.generateContentRequest : b;
  const req = GeminiRequest.parse({ ...(inner as object), model, stream: false });
  return { totalTokens: await tokenize(geminiToChat(req)) };
}

export const geminiTranslator: WireTranslator<GeminiRequest> = {
  wire: 'gemini',
  parse: (body) => GeminiRequest.parse(body),
  isStream: (req) => req.stream,
  model: (req) => req.model,
  toChat: geminiToChat,
  leftOut: geminiLeftOut,
  fromChat: geminiFromChat,
  stream: (req) => new GeminiStream(req),
  errorBody: geminiErrorBody,
};
