// The native OpenAI request bodies (Chat Completions, Completions), checked as strictly as OpenAI
// checks them: each known parameter's type and range, each message by role, each content part and
// tool by type. Unknown extra keys pass through (vLLM's sampling extras: top_k, min_p, …).
// Built once at module load; a call only runs safeParse.
import { z } from 'zod';

const tokenIds = (v: unknown) =>
  Array.isArray(v) && v.length > 0 && v.every((x) => Number.isInteger(x) && x >= 0);

const TextPart = z.looseObject({ type: z.literal('text'), text: z.string() });
const RefusalPart = z.looseObject({ type: z.literal('refusal'), refusal: z.string() });
const UserPart = z.discriminatedUnion('type', [
  TextPart,
  z.looseObject({
    type: z.literal('image_url'),
    image_url: z.looseObject({ url: z.string(), detail: z.string().nullish() }),
  }),
  z.looseObject({
    type: z.literal('input_audio'),
    input_audio: z.looseObject({ data: z.string(), format: z.string() }),
  }),
  z.looseObject({ type: z.literal('file'), file: z.looseObject({}) }),
  // vLLM's multimodal extensions.
  z.looseObject({ type: z.literal('video_url'), video_url: z.looseObject({ url: z.string() }) }),
  z.looseObject({ type: z.literal('audio_url'), audio_url: z.looseObject({ url: z.string() }) }),
]);
const textContent = z.union([z.string(), z.array(TextPart)], {
  error: 'expected a string or an array of text parts',
});

const ToolCall = z.discriminatedUnion('type', [
  z.looseObject({
    id: z.string(),
    type: z.literal('function'),
    function: z.looseObject({ name: z.string(), arguments: z.string() }),
  }),
  z.looseObject({
    id: z.string(),
    type: z.literal('custom'),
    custom: z.looseObject({ name: z.string(), input: z.string() }),
  }),
]);

const name = z.string().nullish();
const Message = z.discriminatedUnion('role', [
  z.looseObject({ role: z.literal('system'), content: textContent, name }),
  z.looseObject({ role: z.literal('developer'), content: textContent, name }),
  z.looseObject({
    role: z.literal('user'),
    content: z.union([z.string(), z.array(UserPart)], {
      error: 'expected a string or an array of content parts',
    }),
    name,
  }),
  z.looseObject({
    role: z.literal('assistant'),
    content: z
      .union([z.string(), z.array(z.discriminatedUnion('type', [TextPart, RefusalPart]))], {
        error: 'expected a string, an array of text/refusal parts, or null',
      })
      .nullish(),
    refusal: z.string().nullish(),
    name,
    tool_calls: z.array(ToolCall).nullish(),
    function_call: z.looseObject({ name: z.string(), arguments: z.string() }).nullish(),
  }),
  z.looseObject({ role: z.literal('tool'), content: textContent, tool_call_id: z.string() }),
  z.looseObject({ role: z.literal('function'), content: z.string().nullable(), name: z.string() }),
]);

const Tool = z.discriminatedUnion('type', [
  z.looseObject({
    type: z.literal('function'),
    function: z.looseObject({
      name: z.string().min(1),
      description: z.string().nullish(),
      parameters: z.record(z.string(), z.unknown()).nullish(),
      strict: z.boolean().nullish(),
    }),
  }),
  z.looseObject({ type: z.literal('custom'), custom: z.looseObject({ name: z.string().min(1) }) }),
]);

const ToolChoice = z.union([
  z.enum(['none', 'auto', 'required']),
  z.discriminatedUnion('type', [
    z.looseObject({ type: z.literal('function'), function: z.looseObject({ name: z.string() }) }),
    z.looseObject({ type: z.literal('custom'), custom: z.looseObject({ name: z.string() }) }),
    z.looseObject({
      type: z.literal('allowed_tools'),
      allowed_tools: z.looseObject({
        mode: z.enum(['auto', 'required']),
        tools: z.array(z.record(z.string(), z.unknown())),
      }),
    }),
  ]),
]);

const ResponseFormat = z.discriminatedUnion('type', [
  z.looseObject({ type: z.literal('text') }),
  z.looseObject({ type: z.literal('json_object') }),
  z.looseObject({
    type: z.literal('json_schema'),
    json_schema: z.looseObject({
      name: z.string().min(1),
      schema: z.record(z.string(), z.unknown()).nullish(),
      strict: z.boolean().nullish(),
    }),
  }),
]);

/** Parameters both APIs share, with OpenAI's types and ranges. */
const Common = {
  model: z.string().min(1),
  stream: z.boolean().nullish(),
  stream_options: z.looseObject({ include_usage: z.boolean().nullish() }).nullish(),
  n: z.number().int().min(1).max(128).nullish(),
  max_tokens: z.number().int().positive().nullish(),
  stop: z.union([z.string(), z.array(z.string()).max(16)]).nullish(),
  temperature: z.number().min(0).max(2).nullish(),
  top_p: z.number().min(0).max(1).nullish(),
  frequency_penalty: z.number().min(-2).max(2).nullish(),
  presence_penalty: z.number().min(-2).max(2).nullish(),
  seed: z.number().int().nullish(),
  logit_bias: z.record(z.string(), z.number().min(-100).max(100)).nullish(),
  user: z.string().nullish(),
  return_token_ids: z.boolean().nullish(),
};

export const ChatBody = z.looseObject({
  ...Common,
  messages: z.array(Message).min(1),
  max_completion_tokens: z.number().int().positive().nullish(),
  tools: z.array(Tool).nullish(),
  tool_choice: ToolChoice.nullish(),
  parallel_tool_calls: z.boolean().nullish(),
  response_format: ResponseFormat.nullish(),
  logprobs: z.boolean().nullish(),
  top_logprobs: z.number().int().min(0).max(20).nullish(),
  store: z.boolean().nullish(),
  metadata: z.record(z.string(), z.string()).nullish(),
  reasoning_effort: z.string().nullish(),
  modalities: z.array(z.string()).nullish(),
  service_tier: z.string().nullish(),
});

export const CompletionBody = z.looseObject({
  ...Common,
  prompt: z.union([
    z.string(),
    z.array(z.string()).min(1),
    z.custom<number[]>(tokenIds, 'expected a list of token ids'),
    z.array(z.custom<number[]>(tokenIds, 'expected a list of token ids')).min(1),
  ]),
  logprobs: z.number().int().min(0).max(20).nullish(),
  echo: z.boolean().nullish(),
  best_of: z.number().int().min(1).max(20).nullish(),
  suffix: z.string().nullish(),
});
