// The Anthropic Messages request (and count_tokens') as this proxy takes it (zod): what a chat backend
// cannot do is refused by name; server tools are kept whole and left out (messages-request.ts).
import { z } from 'zod';

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

export const CustomTool = z.object({
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
