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

export const ChatBody = z
  .looseObject({
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
  })
  .superRefine((body, ctx) => {
    // OpenAI refuses a tool_choice that names a function the request does not declare.
    const choice = body.tool_choice;
    if (!choice || typeof choice !== 'object' || choice.type !== 'function') return;
    const declared = (body.tools ?? []).flatMap((t) => (t.type === 'function' ? [t.function.name] : []));
    if (!declared.includes(choice.function.name))
      ctx.addIssue({
        code: 'custom',
        path: ['tool_choice', 'function', 'name'],
        message: `names ${JSON.stringify(choice.function.name)}, which is not one of the request's tools (${declared.join(', ') || 'none'})`,
      });
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

// The common Chat Completions body, checked without zod: every call of an agent runs this check, and
// zod's walk of a long history costs about half as much as parsing its JSON. It vouches only for
// bodies ChatBody accepts (a property test holds it to that); whatever it does not vouch for (an
// unusual parameter or content part, or an error) goes to ChatBody, which also names what is wrong.

type Check = (v: unknown) => boolean;

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);
const nullish =
  (check: Check): Check =>
  (v) =>
    v === undefined || v === null || check(v);
const isString: Check = (v) => typeof v === 'string';
const isBoolean: Check = (v) => typeof v === 'boolean';
const inRange =
  (min: number, max: number): Check =>
  (v) =>
    typeof v === 'number' && v >= min && v <= max;
const intIn =
  (min: number, max: number): Check =>
  (v) =>
    Number.isSafeInteger(v) && (v as number) >= min && (v as number) <= max;
/** An array whose every element passes (holes included, unlike Array.prototype.every). */
const arrayOf =
  (check: Check): Check =>
  (v) => {
    if (!Array.isArray(v)) return false;
    for (let i = 0; i < v.length; i++) if (!check(v[i])) return false;
    return true;
  };
const textParts = arrayOf((p) => isObject(p) && p.type === 'text' && typeof p.text === 'string');
const text: Check = (v) => typeof v === 'string' || textParts(v);

/** Each known key of `o` passes its check; a key with no check that `known` lists is not vouched for. */
function keysPass(
  o: Record<string, unknown>,
  checks: ReadonlyMap<string, Check>,
  known: ReadonlySet<string>,
) {
  for (const k in o) {
    const check = checks.get(k);
    if (check ? !check(o[k]) : known.has(k)) return false;
  }
  return true;
}

const toolCall: Check = (c) =>
  isObject(c) &&
  typeof c.id === 'string' &&
  c.type === 'function' &&
  isObject(c.function) &&
  typeof c.function.name === 'string' &&
  typeof c.function.arguments === 'string';

/** Every key some message schema of ChatBody knows (the check has a rule for each, or defers). */
export const MESSAGE_KEYS: ReadonlySet<string> = new Set(
  Message.options.flatMap((m) => Object.keys(m.shape)),
);
const ROLE_CHECKS = new Map<string, Map<string, Check>>(
  Object.entries({
    system: { role: isString, content: text, name: nullish(isString) },
    developer: { role: isString, content: text, name: nullish(isString) },
    user: { role: isString, content: text, name: nullish(isString) },
    assistant: {
      role: isString,
      content: nullish(text),
      refusal: nullish(isString),
      name: nullish(isString),
      tool_calls: nullish(arrayOf(toolCall)),
    },
    tool: { role: isString, content: text, tool_call_id: isString },
  }).map(([role, checks]) => [role, new Map(Object.entries(checks))]),
);
const REQUIRED = new Map<string, string[]>(
  Object.entries({
    system: ['content'],
    developer: ['content'],
    user: ['content'],
    assistant: [],
    tool: ['content', 'tool_call_id'],
  }),
);
const message: Check = (m) => {
  if (!isObject(m) || typeof m.role !== 'string') return false;
  const checks = ROLE_CHECKS.get(m.role);
  return (
    checks !== undefined &&
    (REQUIRED.get(m.role) ?? []).every((k) => m[k] !== undefined) &&
    keysPass(m, checks, MESSAGE_KEYS)
  );
};

const tool: Check = (t) =>
  isObject(t) &&
  t.type === 'function' &&
  isObject(t.function) &&
  typeof t.function.name === 'string' &&
  t.function.name.length > 0 &&
  nullish(isString)(t.function.description) &&
  nullish(isObject)(t.function.parameters) &&
  nullish(isBoolean)(t.function.strict);

const CHAT_CHECKS = new Map<string, Check>(
  Object.entries({
    model: (v) => typeof v === 'string' && v.length > 0,
    messages: (v) => arrayOf(message)(v) && (v as unknown[]).length > 0,
    stream: nullish(isBoolean),
    stream_options: nullish((v) => isObject(v) && nullish(isBoolean)(v.include_usage)),
    n: nullish(intIn(1, 128)),
    max_tokens: nullish(intIn(1, Number.MAX_SAFE_INTEGER)),
    max_completion_tokens: nullish(intIn(1, Number.MAX_SAFE_INTEGER)),
    stop: nullish((v) => typeof v === 'string' || (arrayOf(isString)(v) && (v as unknown[]).length <= 16)),
    temperature: nullish(inRange(0, 2)),
    top_p: nullish(inRange(0, 1)),
    frequency_penalty: nullish(inRange(-2, 2)),
    presence_penalty: nullish(inRange(-2, 2)),
    seed: nullish(intIn(Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER)),
    user: nullish(isString),
    return_token_ids: nullish(isBoolean),
    tools: nullish(arrayOf(tool)),
    tool_choice: nullish((v) => v === 'none' || v === 'auto' || v === 'required'),
    parallel_tool_calls: nullish(isBoolean),
    logprobs: nullish(isBoolean),
    top_logprobs: nullish(intIn(0, 20)),
    store: nullish(isBoolean),
    reasoning_effort: nullish(isString),
    service_tier: nullish(isString),
  }),
);
const CHAT_KEYS = new Set(Object.keys(ChatBody.shape));

/** True only for a body ChatBody accepts (false: ask ChatBody). */
export function surelyChatBody(body: unknown): boolean {
  return (
    isObject(body) &&
    body.model !== undefined &&
    body.messages !== undefined &&
    keysPass(body, CHAT_CHECKS, CHAT_KEYS)
  );
}
