// OpenAI Responses (`/v1/responses`) ⇄ Chat Completions (vLLM flavour). Stateless: the harness sends
// the whole conversation in `input` (`store: false` style); `previous_response_id` is refused.
import { z } from 'zod';
import { newId, reasoningOf, sseFrame, usageOf } from './common';
import type { ChatChunk, ChatRequest, ChatResponse, LeftOutTool, WireStream, WireTranslator } from './types';

// ---------- request schema ----------

const unsupported = (what: string, hint: string) =>
  z
    .object({ type: z.literal(what) })
    .loose()
    .check((ctx) => {
      ctx.issues.push({
        code: 'custom',
        message: `${what} is not supported by this proxy: ${hint}`,
        input: ctx.value,
      });
    });

const InputText = z.object({ type: z.literal('input_text'), text: z.string() });
const OutputText = z.object({
  type: z.literal('output_text'),
  text: z.string(),
  annotations: z.unknown().optional(),
  logprobs: z.unknown().optional(),
});
const Refusal = z.object({ type: z.literal('refusal'), refusal: z.string() });
const noMedia = 'the model takes text only';
const Part = z.discriminatedUnion('type', [
  InputText,
  OutputText,
  Refusal,
  unsupported('input_image', noMedia),
  unsupported('input_file', noMedia),
  unsupported('input_audio', noMedia),
]);

const MessageItem = z.object({
  type: z.literal('message'),
  id: z.string().optional(),
  status: z.string().optional(),
  role: z.enum(['user', 'assistant', 'system', 'developer']),
  content: z.preprocess(
    (v) => (typeof v === 'string' ? [{ type: 'input_text', text: v }] : v),
    z.array(Part),
  ) as unknown as z.ZodArray<typeof Part>,
});
const FunctionCallItem = z.object({
  type: z.literal('function_call'),
  id: z.string().optional(),
  status: z.string().optional(),
  call_id: z.string().min(1),
  name: z.string().min(1),
  namespace: z.string().nullish(),
  arguments: z.string(),
});
const FunctionCallOutputItem = z.object({
  type: z.literal('function_call_output'),
  id: z.string().nullish(),
  status: z.string().nullish(),
  call_id: z.string().min(1),
  output: z.union([z.string(), z.array(Part)]),
});
const ReasoningItem = z.object({
  type: z.literal('reasoning'),
  id: z.string().optional(),
  status: z.string().optional(),
  summary: z.array(z.object({ type: z.literal('summary_text'), text: z.string() })).default([]),
  content: z.array(z.object({ type: z.literal('reasoning_text'), text: z.string() })).nullish(),
  encrypted_content: z.string().nullish(),
});
const Item = z.discriminatedUnion('type', [
  MessageItem,
  FunctionCallItem,
  FunctionCallOutputItem,
  ReasoningItem,
  unsupported('item_reference', 'send the referenced item itself in input'),
]);

const Input = z.preprocess(
  (v) =>
    typeof v === 'string'
      ? [{ type: 'message', role: 'user', content: v }]
      : Array.isArray(v)
        ? v.map((it) =>
            it && typeof it === 'object' && !('type' in it) && 'role' in it ? { type: 'message', ...it } : it,
          )
        : v,
  z.array(Item),
) as unknown as z.ZodArray<typeof Item>;

const FunctionTool = z.object({
  type: z.literal('function'),
  name: z.string().min(1),
  description: z.string().nullish(),
  parameters: z.record(z.string(), z.unknown()).nullish(),
  strict: z.boolean().nullish(),
});

/**
 * Function tools grouped under a name (Codex: `{type: "namespace", name: "multi_agent_v1", tools}`).
 * Each function reaches the backend as a function named `<namespace>__<name>`; a call of it comes
 * back as a `function_call` with `namespace` and the tool's own `name`. Members that are not
 * function tools (free-form `custom` tools) are left out like hosted tools.
 */
const NamespaceTool = z.object({
  type: z.literal('namespace'),
  name: z.string().min(1),
  description: z.string().nullish(),
  tools: z.array(z.object({ type: z.string(), name: z.string().min(1) }).loose()),
});

/** Any other tool type (hosted: web_search, file_search, mcp …; free-form `custom`), kept whole. */
const OtherTool = z.object({ type: z.literal('other'), tool: z.record(z.string(), z.unknown()) });

const Tool = z.preprocess(
  (v) =>
    v &&
    typeof v === 'object' &&
    typeof (v as { type?: unknown }).type === 'string' &&
    !['function', 'namespace'].includes((v as { type: string }).type)
      ? { type: 'other', tool: v }
      : v,
  z.discriminatedUnion('type', [FunctionTool, NamespaceTool, OtherTool]),
) as unknown as z.ZodDiscriminatedUnion<[typeof FunctionTool, typeof NamespaceTool, typeof OtherTool]>;

const ToolChoice = z.union([
  z.enum(['auto', 'none', 'required']),
  z.object({ type: z.literal('function'), name: z.string() }),
]);

const TextFormat = z.discriminatedUnion('type', [
  z.object({ type: z.literal('text') }),
  z.object({ type: z.literal('json_object') }),
  z.object({
    type: z.literal('json_schema'),
    name: z.string(),
    schema: z.record(z.string(), z.unknown()),
    description: z.string().optional(),
    strict: z.boolean().nullish(),
  }),
]);

export const ResponsesRequest = z.object({
  model: z.string().min(1),
  input: Input,
  instructions: z.string().nullish(),
  tools: z.array(Tool).optional(),
  tool_choice: ToolChoice.optional(),
  parallel_tool_calls: z.boolean().nullish(),
  max_output_tokens: z.number().int().positive().nullish(),
  temperature: z.number().min(0).max(2).nullish(),
  top_p: z.number().min(0).max(1).nullish(),
  stream: z.boolean().nullish(),
  text: z.object({ format: TextFormat.optional() }).loose().nullish(),
  reasoning: z.object({ effort: z.string().nullish(), summary: z.string().nullish() }).loose().nullish(),
  metadata: z.record(z.string(), z.string()).nullish(),
  user: z.string().nullish(),
  // Accepted as OpenAI types them; the proxy stores nothing upstream and answers whole (README).
  store: z.boolean().nullish(),
  include: z.array(z.string()).nullish(),
  truncation: z.enum(['auto', 'disabled']).nullish(),
  previous_response_id: z
    .null({ error: 'previous_response_id is not supported: send the whole conversation in input' })
    .optional(),
});
export type ResponsesRequest = z.infer<typeof ResponsesRequest>;

// ---------- request → chat ----------

type ChatMessage = Record<string, unknown> & { role: string };
type PartT = z.infer<typeof InputText> | z.infer<typeof OutputText> | z.infer<typeof Refusal>;
type InputItem =
  | (Omit<z.infer<typeof MessageItem>, 'content'> & { content: PartT[] })
  | z.infer<typeof FunctionCallItem>
  | (Omit<z.infer<typeof FunctionCallOutputItem>, 'output'> & { output: string | PartT[] })
  | z.infer<typeof ReasoningItem>;

function partsText(parts: PartT[]): string {
  return parts
    .map((p) =>
      p.type === 'input_text' || p.type === 'output_text' ? p.text : p.type === 'refusal' ? p.refusal : '',
    )
    .join('\n');
}

/**
 * Between a namespace and its tool's name in the function name the backend sees: valid in OpenAI
 * function names (`[A-Za-z0-9_-]`), and the form Codex itself shows models (`multi_agent_v1__spawn_agent`).
 * Calls are mapped back through the request's own tools, so a name is never split by guessing.
 */
export const NAMESPACE_SEPARATOR = '__';

export function qualifiedName(namespace: string | null | undefined, name: string): string {
  return namespace ? `${namespace}${NAMESPACE_SEPARATOR}${name}` : name;
}

interface ToolPlan {
  /** The chat function tools (namespaced ones under their qualified names). */
  functions: { name: string; description?: string | null; parameters?: unknown; strict?: boolean | null }[];
  /** Qualified name → the namespace and name the client knows. */
  namespaced: Map<string, { namespace: string; name: string }>;
  leftOut: LeftOutTool[];
}

const HOSTED = "hosted tool: it runs on the API provider's side, and the inference backend cannot run it";
const CUSTOM = 'free-form custom tool: chat backends call function tools with JSON arguments only';
const plans = new WeakMap<ResponsesRequest, ToolPlan>();

/** How the request's tools reach the backend (computed once per request). */
export function toolPlan(req: ResponsesRequest): ToolPlan {
  const known = plans.get(req);
  if (known) return known;
  const plan: ToolPlan = { functions: [], namespaced: new Map(), leftOut: [] };
  (req.tools ?? []).forEach((t, i) => {
    if (t.type === 'function') plan.functions.push(t);
    else if (t.type === 'namespace')
      t.tools.forEach((m, j) => {
        if (m.type !== 'function') {
          plan.leftOut.push({ path: `tools[${i}].tools[${j}]`, tool: `${t.name}.${m.name}`, reason: CUSTOM });
          return;
        }
        const f = m as { name: string; description?: unknown; parameters?: unknown; strict?: unknown };
        const name = qualifiedName(t.name, f.name);
        plan.namespaced.set(name, { namespace: t.name, name: f.name });
        plan.functions.push({
          name,
          description: typeof f.description === 'string' ? f.description : null,
          parameters: f.parameters,
          strict: typeof f.strict === 'boolean' ? f.strict : null,
        });
      });
    else {
      const type = String(t.tool.type);
      const custom = type === 'custom';
      plan.leftOut.push({
        path: `tools[${i}]`,
        tool: custom ? String(t.tool.name ?? type) : type,
        reason: custom ? CUSTOM : HOSTED,
      });
    }
  });
  const seen = new Set<string>();
  for (const f of plan.functions) {
    if (seen.has(f.name))
      throw new Error(
        `tools: two tools reach the backend as ${f.name} (a namespace's tool is named namespace${NAMESPACE_SEPARATOR}name)`,
      );
    seen.add(f.name);
  }
  plans.set(req, plan);
  return plan;
}

export function responsesToChatMessages(req: ResponsesRequest): ChatMessage[] {
  const out: ChatMessage[] = [];
  if (req.instructions) out.push({ role: 'system', content: req.instructions });
  // An assistant turn arrives as reasoning, message and function_call items; chat wants one message.
  let turn: { content: string | null; reasoning: string | null; calls: unknown[] } | null = null;
  const flush = () => {
    if (!turn) return;
    const m: ChatMessage = { role: 'assistant', content: turn.content ?? '' };
    if (turn.reasoning !== null) m.reasoning_content = turn.reasoning;
    if (turn.calls.length) m.tool_calls = turn.calls;
    out.push(m);
    turn = null;
  };
  for (const item of req.input as InputItem[]) {
    if (item.type === 'reasoning') {
      if (turn && (turn.content !== null || turn.calls.length || turn.reasoning !== null)) flush();
      const text = item.content?.length
        ? item.content.map((c) => c.text).join('')
        : item.summary.map((s) => s.text).join('\n\n');
      turn = turn ?? { content: null, reasoning: null, calls: [] };
      turn.reasoning = text;
    } else if (item.type === 'message' && item.role === 'assistant') {
      if (turn?.calls.length) flush();
      turn = turn ?? { content: null, reasoning: null, calls: [] };
      turn.content = (turn.content ?? '') + partsText(item.content);
    } else if (item.type === 'function_call') {
      turn = turn ?? { content: null, reasoning: null, calls: [] };
      turn.calls.push({
        id: item.call_id,
        type: 'function',
        function: { name: qualifiedName(item.namespace, item.name), arguments: item.arguments },
      });
    } else if (item.type === 'function_call_output') {
      flush();
      out.push({
        role: 'tool',
        tool_call_id: item.call_id,
        content: typeof item.output === 'string' ? item.output : partsText(item.output),
      });
    } else if (item.type === 'message') {
      flush();
      out.push({ role: item.role === 'developer' ? 'system' : item.role, content: partsText(item.content) });
    }
  }
  flush();
  return out;
}

export function responsesToChat(req: ResponsesRequest): ChatRequest {
  const chat: Record<string, unknown> = { model: req.model, messages: responsesToChatMessages(req) };
  if (req.max_output_tokens != null) chat.max_tokens = req.max_output_tokens;
  const { functions } = toolPlan(req);
  if (functions.length)
    chat.tools = functions.map((t) => ({
      type: 'function',
      function: {
        name: t.name,
        ...(t.description != null ? { description: t.description } : {}),
        parameters: t.parameters ?? { type: 'object', properties: {} },
        ...(t.strict != null ? { strict: t.strict } : {}),
      },
    }));
  const tc = req.tool_choice;
  if (tc !== undefined)
    chat.tool_choice = typeof tc === 'string' ? tc : { type: 'function', function: { name: tc.name } };
  if (req.parallel_tool_calls != null) chat.parallel_tool_calls = req.parallel_tool_calls;
  if (req.temperature != null) chat.temperature = req.temperature;
  if (req.top_p != null) chat.top_p = req.top_p;
  if (req.user) chat.user = req.user;
  const fmt = req.text?.format;
  if (fmt?.type === 'json_object') chat.response_format = { type: 'json_object' };
  if (fmt?.type === 'json_schema')
    chat.response_format = {
      type: 'json_schema',
      json_schema: {
        name: fmt.name,
        schema: fmt.schema,
        ...(fmt.description ? { description: fmt.description } : {}),
        ...(fmt.strict != null ? { strict: fmt.strict } : {}),
      },
    };
  if (req.stream) {
    chat.stream = true;
    chat.stream_options = { include_usage: true };
  }
  return chat as ChatRequest;
}

// ---------- chat → Response ----------

function idBase(chatId: string | undefined): string {
  const b = chatId?.replace(/^chatcmpl-/, '').replace(/[^A-Za-z0-9_-]/g, '');
  return b || newId('');
}

interface Usage {
  input: number;
  output: number;
  cached: number;
}

function responseObject(
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

const reasoningItem = (base: string, text: string) => ({
  id: `rs_${base}`,
  type: 'reasoning' as const,
  summary: [] as unknown[],
  content: [{ type: 'reasoning_text' as const, text }],
});
const textPart = (text: string) => ({ type: 'output_text' as const, text, annotations: [], logprobs: [] });
const messageItem = (base: string, text: string, status: string) => ({
  id: `msg_${base}`,
  type: 'message' as const,
  role: 'assistant' as const,
  status,
  content: [textPart(text)],
});
/** A function_call item; a namespaced tool's call carries its namespace and its own name. */
const callItem = (
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

// ---------- streaming ----------

type OpenItem =
  | { kind: 'reasoning'; index: number; text: string }
  | { kind: 'message'; index: number; text: string }
  | { kind: 'call'; index: number; n: number; callId: string; name: string; args: string };

class ResponsesStream implements WireStream {
  private seq = 0;
  private started = false;
  private ended = false;
  private base = '';
  private createdAt = 0;
  private output: unknown[] = [];
  private open: OpenItem | null = null;
  private calls = new Map<number, number>(); // chat tool index → call number
  private hasMessage = false;
  private finish: string | null = null;
  private usage: Usage | null = null;
  private final: ReturnType<typeof responseObject> | null = null;

  constructor(private req: ResponsesRequest) {}

  private ev(type: string, fields: Record<string, unknown>): string {
    return sseFrame(type, { type, sequence_number: this.seq++, ...fields });
  }

  private status(): 'completed' | 'incomplete' {
    return this.finish === 'length' ? 'incomplete' : 'completed';
  }

  private start(chunk?: ChatChunk): string[] {
    if (this.started) return [];
    this.started = true;
    this.base = idBase(chunk?.id);
    this.createdAt = chunk?.created ?? Math.floor(Date.now() / 1000);
    const r = responseObject(this.req, this.base, this.createdAt, 'in_progress', [], null);
    return [this.ev('response.created', { response: r }), this.ev('response.in_progress', { response: r })];
  }

  private close(): string[] {
    const o = this.open;
    if (!o) return [];
    this.open = null;
    const st = this.status();
    if (o.kind === 'reasoning') {
      const item = reasoningItem(this.base, o.text);
      const id = item.id;
      this.output[o.index] = item;
      return [
        this.ev('response.reasoning_text.done', {
          item_id: id,
          output_index: o.index,
          content_index: 0,
          text: o.text,
        }),
        this.ev('response.content_part.done', {
          item_id: id,
          output_index: o.index,
          content_index: 0,
          part: { type: 'reasoning_text', text: o.text },
        }),
        this.ev('response.output_item.done', { output_index: o.index, item }),
      ];
    }
    if (o.kind === 'message') {
      const item = messageItem(this.base, o.text, st);
      this.output[o.index] = item;
      return [
        this.ev('response.output_text.done', {
          item_id: item.id,
          output_index: o.index,
          content_index: 0,
          text: o.text,
          logprobs: [],
        }),
        this.ev('response.content_part.done', {
          item_id: item.id,
          output_index: o.index,
          content_index: 0,
          part: textPart(o.text),
        }),
        this.ev('response.output_item.done', { output_index: o.index, item }),
      ];
    }
    const item = callItem(this.req, this.base, o.n, o.callId, o.name, o.args, st);
    this.output[o.index] = item;
    return [
      this.ev('response.function_call_arguments.done', {
        item_id: item.id,
        output_index: o.index,
        name: item.name,
        arguments: o.args,
      }),
      this.ev('response.output_item.done', { output_index: o.index, item }),
    ];
  }

  private openReasoning(): string[] {
    return this.openTextItem(
      'reasoning',
      { ...reasoningItem(this.base, ''), content: [] },
      {
        type: 'reasoning_text',
        text: '',
      },
    );
  }

  private openMessage(): string[] {
    this.hasMessage = true;
    return this.openTextItem(
      'message',
      { ...messageItem(this.base, '', 'in_progress'), content: [] },
      textPart(''),
    );
  }

  /** Closes the open item, then adds an output item with one empty content part that deltas fill. */
  private openTextItem(
    kind: 'reasoning' | 'message',
    item: { id: string; [key: string]: unknown },
    part: unknown,
  ): string[] {
    const frames = this.close();
    const index = this.output.length;
    this.output.push(item);
    this.open = { kind, index, text: '' };
    frames.push(
      this.ev('response.output_item.added', { output_index: index, item }),
      this.ev('response.content_part.added', {
        item_id: item.id,
        output_index: index,
        content_index: 0,
        part,
      }),
    );
    return frames;
  }

  chunk(chunk: ChatChunk): string[] {
    if (this.ended) return [];
    const frames = this.start(chunk);
    const u = usageOf(chunk);
    if (u) this.usage = { input: u.prompt_tokens, output: u.completion_tokens, cached: u.cached_tokens };
    const choice = chunk.choices?.[0];
    if (!choice) return frames;
    const d = choice.delta ?? {};
    const reasoning = reasoningOf(d);
    if (reasoning) {
      if (this.open?.kind !== 'reasoning') frames.push(...this.openReasoning());
      const o = this.open as OpenItem & { kind: 'reasoning' };
      o.text += reasoning;
      frames.push(
        this.ev('response.reasoning_text.delta', {
          item_id: `rs_${this.base}`,
          output_index: o.index,
          content_index: 0,
          delta: reasoning,
        }),
      );
    }
    if (d.content) {
      if (this.open?.kind !== 'message') frames.push(...this.openMessage());
      const o = this.open as OpenItem & { kind: 'message' };
      o.text += d.content;
      frames.push(
        this.ev('response.output_text.delta', {
          item_id: `msg_${this.base}`,
          output_index: o.index,
          content_index: 0,
          delta: d.content,
          logprobs: [],
        }),
      );
    }
    for (const tc of d.tool_calls ?? []) {
      const ti = tc.index ?? 0;
      if (!this.calls.has(ti) || this.open?.kind !== 'call' || this.open.n !== this.calls.get(ti)) {
        if (this.calls.has(ti)) continue; // a fragment for an already closed call: vLLM does not interleave
        const n = this.calls.size;
        this.calls.set(ti, n);
        frames.push(...this.close());
        const index = this.output.length;
        const callId = tc.id || newId('call_');
        const name = tc.function?.name ?? '';
        const item = callItem(this.req, this.base, n, callId, name, '', 'in_progress');
        this.output.push(item);
        this.open = { kind: 'call', index, n, callId, name, args: '' };
        frames.push(this.ev('response.output_item.added', { output_index: index, item }));
      }
      const o = this.open as OpenItem & { kind: 'call' };
      const args = tc.function?.arguments;
      if (args) {
        o.args += args;
        frames.push(
          this.ev('response.function_call_arguments.delta', {
            item_id: `fc_${this.base}_${o.n}`,
            output_index: o.index,
            delta: args,
          }),
        );
      }
    }
    if (choice.finish_reason) this.finish = choice.finish_reason;
    return frames;
  }

  end(): string[] {
    if (this.ended) return [];
    const frames = this.start();
    frames.push(...this.close());
    if (!this.hasMessage && this.calls.size === 0) frames.push(...this.openMessage(), ...this.close());
    this.ended = true;
    const status = this.status();
    this.final = responseObject(
      this.req,
      this.base,
      this.createdAt,
      status,
      structuredClone(this.output),
      this.usage,
    );
    frames.push(
      this.ev(status === 'completed' ? 'response.completed' : 'response.incomplete', {
        response: this.final,
      }),
    );
    return frames;
  }

  error(message: string): string[] {
    this.ended = true;
    return [this.ev('error', { code: 'server_error', message, param: null })];
  }

  /**
   * After end(): the response of its `response.completed` (or `.incomplete`) event, the one the client
   * ends with. Before it (a stream that failed or was cancelled): what the client got so far, the
   * open item with its text and arguments up to there, all `in_progress`.
   */
  assembled() {
    if (this.final) return structuredClone(this.final);
    const output = structuredClone(this.output);
    const o = this.open;
    if (o?.kind === 'reasoning') output[o.index] = reasoningItem(this.base, o.text);
    else if (o?.kind === 'message') output[o.index] = messageItem(this.base, o.text, 'in_progress');
    else if (o) output[o.index] = callItem(this.req, this.base, o.n, o.callId, o.name, o.args, 'in_progress');
    return responseObject(
      this.req,
      this.base || newId(''),
      this.createdAt,
      'in_progress',
      output,
      this.usage,
    );
  }
}

// ---------- errors, the translator ----------

export function responsesErrorBody(status: number, message: string, field?: string | null) {
  const type =
    status === 401
      ? 'authentication_error'
      : status === 429
        ? 'rate_limit_error'
        : status >= 500
          ? 'server_error'
          : 'invalid_request_error';
  return { error: { message, type, param: field ?? null, code: null } };
}

export const responsesTranslator: WireTranslator<ResponsesRequest> = {
  wire: 'responses',
  parse: (body) => ResponsesRequest.parse(body),
  isStream: (req) => req.stream === true,
  model: (req) => req.model,
  toChat: responsesToChat,
  leftOut: (req) => toolPlan(req).leftOut,
  fromChat: responsesFromChat,
  stream: (req) => new ResponsesStream(req),
  errorBody: responsesErrorBody,
};
