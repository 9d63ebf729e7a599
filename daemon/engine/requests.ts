// The reference engine's requests: zod schemas of the vLLM OpenAI-compatible bodies it accepts (a 400
// names the field), the dev-mode RPC's arguments, and the HTTP error they raise.
import { z } from 'zod';
import { type ChatMessage, VOCAB_SIZE } from './tokenizer';

export const CollectiveRpc = z
  .object({
    method: z.string(),
    args: z.array(z.unknown()).default([]),
    kwargs: z.record(z.string(), z.unknown()).default({}),
  })
  .loose();
export const UpdateConfigArgs = z
  .object({ model_config: z.object({ model: z.string().min(1) }).loose() })
  .loose();

const TextPart = z.object({ type: z.string(), text: z.string().optional() }).loose();
const Message = z
  .object({
    role: z.string().min(1),
    content: z.union([z.string(), z.array(TextPart), z.null()]).optional(),
  })
  .loose();

/** A penalty this engine does not apply: only its neutral value (or none) is accepted, not ignored. */
function neutral(value: number) {
  return z
    .number()
    .refine((v) => v === value, `the reference engine applies no penalties: only ${value} is accepted`)
    .nullish();
}

const Common = {
  model: z.string().optional(),
  n: z.number().int().min(1).max(64).default(1),
  temperature: z.number().min(0).max(100).nullish(),
  top_p: z.number().gt(0).max(1).nullish(),
  top_k: z.number().int().min(-1).nullish(),
  min_p: z.number().min(0).max(1).nullish(),
  repetition_penalty: neutral(1),
  presence_penalty: neutral(0),
  frequency_penalty: neutral(0),
  seed: z.number().int().nullish(),
  stop: z.union([z.string(), z.array(z.string()).max(16)]).nullish(),
  stream: z.boolean().nullish(),
  stream_options: z.object({ include_usage: z.boolean().nullish() }).loose().nullish(),
  return_token_ids: z.boolean().nullish(),
};

export const ChatRequest = z
  .object({
    ...Common,
    messages: z.array(Message).min(1),
    max_tokens: z.number().int().positive().nullish(),
    max_completion_tokens: z.number().int().positive().nullish(),
    logprobs: z.boolean().nullish(),
    top_logprobs: z.number().int().min(0).max(20).nullish(),
    add_generation_prompt: z.boolean().default(true),
  })
  .loose();

const TokenIds = z.array(
  z
    .number()
    .int()
    .min(0)
    .max(VOCAB_SIZE - 1),
);
export const CompletionRequest = z
  .object({
    ...Common,
    prompt: z.union([
      z.string(),
      TokenIds.min(1),
      z.array(z.string()).min(1),
      z.array(TokenIds.min(1)).min(1),
    ]),
    max_tokens: z.number().int().positive().nullish(),
    logprobs: z.number().int().min(0).max(20).nullish(),
    echo: z.boolean().nullish(),
  })
  .loose();

export const TokenizePrompt = z
  .object({ prompt: z.string(), add_special_tokens: z.boolean().optional() })
  .loose();
export const TokenizeChat = z
  .object({ messages: z.array(Message).min(1), add_generation_prompt: z.boolean().default(true) })
  .loose();
export const DetokenizeRequest = z.object({ tokens: TokenIds }).loose();

export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly param: string | null = null,
  ) {
    super(message);
  }
}

function contentText(content: z.infer<typeof Message>['content']): string {
  if (content == null) return '';
  if (typeof content === 'string') return content;
  return content.map((p) => p.text ?? '').join('');
}

export function toChatMessages(messages: z.infer<typeof Message>[]): ChatMessage[] {
  return messages.map((m) => ({ role: m.role, content: contentText(m.content) }));
}

export function parse<S extends z.ZodType>(schema: S, body: unknown): z.infer<S> {
  const r = schema.safeParse(body);
  if (!r.success) {
    const first = r.error.issues[0];
    throw new HttpError(400, z.prettifyError(r.error), first ? first.path.join('.') : null);
  }
  return r.data;
}
