// The OpenAI Responses request as this proxy takes it (zod): what a chat backend cannot do is refused
// by name (previous_response_id, media, hosted tools are left out with a reason by the tool plan).
import { z } from 'zod';

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

export type PartT = z.infer<typeof InputText> | z.infer<typeof OutputText> | z.infer<typeof Refusal>;
export type InputItem =
  | (Omit<z.infer<typeof MessageItem>, 'content'> & { content: PartT[] })
  | z.infer<typeof FunctionCallItem>
  | (Omit<z.infer<typeof FunctionCallOutputItem>, 'output'> & { output: string | PartT[] })
  | z.infer<typeof ReasoningItem>;
