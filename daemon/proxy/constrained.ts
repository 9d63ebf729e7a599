// Request fields that constrain decoding on a training call. vLLM applies them to the logits before it
// samples, and the logprobs it returns describe the constrained distribution, not the policy's softmax:
// the grammar bitmask of structured output is applied to the logits before the sampler sees them
// (vLLM 0.34 v1/worker/gpu/model_runner.py:1737), so even raw logprobs carry it; logit_bias,
// allowed_token_ids and min_tokens (v1/worker/gpu/sample/logit_bias.py:57,63,94), bad_words
// (sample/bad_words.py:40) and custom logits processors (sample/sampler.py:71) run before processed
// logprobs are taken (sampler.py:170), thinking_token_budget forces the end of thinking
// (sampler.py:257), and a watermark picks each token by a keyed function of its context.
// An importance ratio against the trainer's plain softmax would be wrong on those tokens. Every field
// of vLLM's Chat Completions, Completions and Responses request models is classified in
// constrained.test.ts.
import type { ConstrainedMode } from '../protocol/algorithm';
import type { WireApi } from '../protocol/entities';
import { ProxyError } from './errors';
import type { Json } from './json';

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);
const nonEmpty = (v: unknown): boolean =>
  Array.isArray(v) ? v.length > 0 : isObject(v) && Object.keys(v).length > 0;
/** The request offers tools the model may call (vLLM's tool parser adjusts such a request). */
const callsTools = (body: Json): boolean =>
  Array.isArray(body.tools) && body.tools.length > 0 && body.tool_choice !== 'none';

/** The name of the field of `body` that bends the distribution (as the backend body names it), or null. */
type Check = (body: Json) => string | null;

const field =
  (name: string, bends: (v: unknown, body: Json) => boolean): Check =>
  (body) =>
    body[name] != null && bends(body[name], body) ? name : null;

/**
 * A function tool marked strict pins its arguments with a structural tag even under tool_choice auto
 * (parser/abstract_parser.py:513 _apply_structural_tag, tool_parsers/structural_tag_registry.py:186
 * resolve_tool_strictness), where the server's tool parser has one (hermes for Qwen3:
 * tool_parsers/hermes_tool_parser.py:35) and VLLM_ENFORCE_STRICT_TOOL_CALLING is on (the default,
 * envs.py:1956).
 */
const strictTool: Check = (body) => {
  if (!callsTools(body)) return null;
  const i = (body.tools as unknown[]).findIndex(
    (t) => isObject(t) && isObject(t.function) && t.function.strict === true,
  );
  return i >= 0 ? `tools[${i}].function.strict` : null;
};

/** The kinds of structured output, one of which a request names (v1/structured_output/request.py:77). */
const GRAMMARS = ['json', 'regex', 'choice', 'grammar', 'structural_tag'];

/** Each check, in the order the fields are named. */
const CHECKS: Check[] = [
  field('logit_bias', nonEmpty), // sampling_params.py:413
  field('allowed_token_ids', nonEmpty), // sampling_params.py:416
  field('bad_words', nonEmpty), // sampling_params.py:424
  field('min_tokens', (v) => typeof v === 'number' && v > 0), // sampling_params.py:339
  // json_object, json_schema and structural_tag become structured outputs; "text" does not
  // (entrypoints/generate/base/protocol.py:181 structured_outputs_from_response_format).
  field('response_format', (v) => isObject(v) && v.type !== 'text'),
  field('structured_outputs', (v) => isObject(v) && (GRAMMARS.some((k) => v[k] != null) || !!v.json_object)),
  // "required" and a named tool become a JSON-schema structured output (tool_parsers/
  // abstract_tool_parser.py:147, tool_parsers/utils.py:449 get_json_schema_from_tools); with no tools,
  // "required" falls back to "none" (entrypoints/openai/chat_completion/protocol.py:985).
  field('tool_choice', (v, body) => isObject(v) || (v === 'required' && callsTools(body))),
  field('thinking_token_budget', (v) => typeof v === 'number'), // sampling_params.py:431
  field('use_beam_search', (v) => v === true), // beam search picks by score: no token is a sample
  // On a server with a watermark_config (null asks for it too: config/vllm.py:1296; false opts out
  // unless it enforces), each token is a Gumbel-max pick keyed by its context
  // (v1/watermarking/gpu_sampler.py:53): not a draw from the policy, and siblings of a group share it.
  field('watermarking', (v) => v === true),
  // vllm_xargs become SamplingParams.extra_args (chat_completion/protocol.py:785, sampling_params.py:419):
  // what the server's custom logits processors read (v1/worker/gpu/sample/logits_processor/interface.py:126).
  field('vllm_xargs', nonEmpty),
  strictTool,
  // One call at most: the server's tool parser constrains the call envelope with a structural tag
  // (parser/abstract_parser.py:537-545), under tool_choice auto too.
  field('parallel_tool_calls', (v, body) => v === false && callsTools(body)),
];

/**
 * The fields of `body` (a chat or completions body as the backend gets it) that constrain decoding, in
 * a fixed order; empty when none does.
 */
export function constrainedFields(body: Json): string[] {
  const out: string[] = [];
  for (const check of CHECKS) {
    const name = check(body);
    if (name) out.push(name);
  }
  return out;
}

/** Where a translated wire's harness wrote what became a chat field (the 400 names the harness's). */
const HARNESS_FIELD: Partial<Record<WireApi, Record<string, string>>> = {
  responses: { response_format: 'text.format' },
  messages: { parallel_tool_calls: 'tool_choice.disable_parallel_tool_use' },
  gemini: {
    response_format: 'generationConfig.responseMimeType',
    tool_choice: 'toolConfig.functionCallingConfig.mode',
  },
};

/** The field as the harness wrote it: a translated wire's tools are numbered otherwise, so `tools`. */
const harnessField = (f: string, wire?: WireApi): string =>
  (wire && HARNESS_FIELD[wire]?.[f]) ?? (wire && f.startsWith('tools[') ? 'tools' : f);

/**
 * A training call's constrained fields, to record (`record`), or a ProxyError 400 naming the first
 * as the harness wrote it (`refuse`). null: none.
 */
export function checkConstrained(body: Json, mode: ConstrainedMode, wire?: WireApi): string[] | null {
  const fields = constrainedFields(body);
  if (fields.length === 0) return null;
  if (mode === 'record') return fields;
  const names = fields.map((f) => harnessField(f, wire));
  throw new ProxyError(
    400,
    `${names.join(', ')} constrain${names.length === 1 ? 's' : ''} decoding: the logprobs vLLM returns would not be the policy's, and this run sets algorithm.sampling.constrained: refuse (record forwards the call and keeps its tokens out of the loss)`,
    names[0],
    'constrained_sampling',
  );
}
