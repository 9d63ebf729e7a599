// Request fields that constrain decoding on a training call. vLLM applies them to the logits before it
// samples, and the logprobs it returns describe the constrained distribution, not the policy's softmax:
// the grammar bitmask of structured output is applied to the logits before the sampler sees them
// (vLLM 0.34 v1/worker/gpu/model_runner.py:1734), so even raw logprobs carry it; logit_bias,
// allowed_token_ids and min_tokens (v1/worker/gpu/sample/logit_bias.py:63,78,94) and bad_words
// (sample/bad_words.py:40) are logits processors that run before processed logprobs are taken
// (sample/sampler.py:71,170), and thinking_token_budget forces the end of thinking (sampler.py:257).
// An importance ratio against the trainer's plain softmax would be wrong on those tokens.
import type { ConstrainedMode } from '../protocol/config';
import type { WireApi } from '../protocol/entities';
import { ProxyError } from './errors';
import type { Json } from './json';

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);
const nonEmpty = (v: unknown): boolean =>
  Array.isArray(v) ? v.length > 0 : isObject(v) && Object.keys(v).length > 0;

/** Each field that bends the distribution, and when a value of it does. */
const BENDS: [field: string, bends: (v: unknown, body: Json) => boolean][] = [
  ['logit_bias', nonEmpty], // sampling_params.py:413
  ['allowed_token_ids', nonEmpty], // sampling_params.py:416
  ['bad_words', nonEmpty], // sampling_params.py:424
  ['min_tokens', (v) => typeof v === 'number' && v > 0], // sampling_params.py:339
  // json_object, json_schema and structural_tag become structured outputs; "text" does not
  // (entrypoints/generate/base/protocol.py:186 structured_outputs_from_response_format).
  ['response_format', (v) => isObject(v) && v.type !== 'text'],
  ['structured_outputs', (v) => isObject(v) && Object.values(v).some((x) => x != null && x !== false)],
  // "required" and a named tool become a JSON-schema structured output (tool_parsers/
  // abstract_tool_parser.py:147, tool_parsers/utils.py:449 get_json_schema_from_tools); with no tools,
  // "required" falls back to "none" (entrypoints/openai/chat_completion/protocol.py:985).
  [
    'tool_choice',
    (v, body) => isObject(v) || (v === 'required' && Array.isArray(body.tools) && body.tools.length > 0),
  ],
  ['thinking_token_budget', (v) => typeof v === 'number'], // sampling_params.py:431
  ['use_beam_search', (v) => v === true], // beam search picks by score: no token is a sample
];

/**
 * The fields of `body` (a chat or completions body as the backend gets it) that constrain decoding, in
 * a fixed order; empty when none does.
 */
export function constrainedFields(body: Json): string[] {
  const out: string[] = [];
  for (const [field, bends] of BENDS) {
    const v = body[field];
    if (v != null && bends(v, body)) out.push(field);
  }
  return out;
}

/** Where a translated wire's harness wrote what became a chat field (the 400 names the harness's). */
const HARNESS_FIELD: Partial<Record<WireApi, Record<string, string>>> = {
  responses: { response_format: 'text.format' },
  gemini: {
    response_format: 'generationConfig.responseMimeType',
    tool_choice: 'toolConfig.functionCallingConfig.mode',
  },
};

/**
 * A training call's constrained fields, to record (`record`), or a ProxyError 400 naming the first
 * as the harness wrote it (`refuse`). null: none.
 */
export function checkConstrained(body: Json, mode: ConstrainedMode, wire?: WireApi): string[] | null {
  const fields = constrainedFields(body);
  if (fields.length === 0) return null;
  if (mode === 'record') return fields;
  const names = fields.map((f) => (wire && HARNESS_FIELD[wire]?.[f]) ?? f);
  throw new ProxyError(
    400,
    `${names.join(', ')} constrain${names.length === 1 ? 's' : ''} decoding: the logprobs vLLM returns would not be the policy's, and this run sets algorithm.sampling.constrained: refuse (record forwards the call and keeps its tokens out of the loss)`,
    names[0],
    'constrained_sampling',
  );
}
