// Which request fields constrain decoding on a training call: every field of vLLM 0.34's Chat
// Completions, Completions and Responses request models is classified here (it bends the distribution
// the policy's logprobs come from, the run's sampling replaces it, or it leaves it alone), and each
// that bends is named by the file and line where vLLM applies it.
import { describe, expect, it } from 'vitest';
import { checkConstrained, constrainedFields } from './constrained';
import { ProxyError } from './errors';
import type { Json } from './json';
import { callSampling } from './sampling';
import { ResponsesRequest, responsesToChat } from './translate/responses';

const tools = [{ type: 'function', function: { name: 'f', parameters: {} } }];
const strictTools = [tools[0], { type: 'function', function: { name: 'g', parameters: {}, strict: true } }];

/** Each field that bends (its model field), where vLLM applies it, a body that bends, bodies that do not. */
const BENDING: { field: string; model: string; where: string; bends: Json; plain: Json[] }[] = [
  {
    field: 'logit_bias',
    model: 'logit_bias',
    where: 'v1/worker/gpu/sample/logit_bias.py:57',
    bends: { logit_bias: { '7': 5 } },
    plain: [{ logit_bias: {} }, { logit_bias: null }],
  },
  {
    field: 'allowed_token_ids',
    model: 'allowed_token_ids',
    where: 'v1/worker/gpu/sample/logit_bias.py:63',
    bends: { allowed_token_ids: [1, 2] },
    plain: [{ allowed_token_ids: [] }],
  },
  {
    field: 'bad_words',
    model: 'bad_words',
    where: 'v1/worker/gpu/sample/bad_words.py:40',
    bends: { bad_words: ['x'] },
    plain: [{ bad_words: [] }],
  },
  {
    field: 'min_tokens',
    model: 'min_tokens',
    where: 'v1/worker/gpu/sample/logit_bias.py:94',
    bends: { min_tokens: 3 },
    plain: [{ min_tokens: 0 }],
  },
  {
    field: 'response_format',
    model: 'response_format',
    where: 'entrypoints/generate/base/protocol.py:181',
    bends: { response_format: { type: 'json_object' } },
    plain: [{ response_format: { type: 'text' } }],
  },
  {
    field: 'response_format',
    model: 'response_format',
    where: 'entrypoints/generate/base/protocol.py:205 (structural_tag)',
    bends: { response_format: { type: 'structural_tag', format: {} } },
    plain: [],
  },
  {
    field: 'structured_outputs',
    model: 'structured_outputs',
    where: 'v1/structured_output/request.py:77, v1/worker/gpu/model_runner.py:1737',
    bends: { structured_outputs: { regex: 'a+' } },
    plain: [{ structured_outputs: { json: null } }, { structured_outputs: { json_object: false } }],
  },
  {
    field: 'structured_outputs',
    model: 'structured_outputs',
    where: 'v1/structured_output/request.py:84 (json_object)',
    bends: { structured_outputs: { json_object: true } },
    plain: [],
  },
  {
    field: 'tool_choice',
    model: 'tool_choice',
    where: 'tool_parsers/abstract_tool_parser.py:147, chat_completion/protocol.py:985',
    bends: { tool_choice: 'required', tools },
    plain: [
      { tool_choice: 'required', tools: [] },
      { tool_choice: 'auto', tools },
    ],
  },
  {
    field: 'tool_choice',
    model: 'tool_choice',
    where: 'tool_parsers/utils.py:449 (a named function)',
    bends: { tool_choice: { type: 'function', function: { name: 'f' } }, tools },
    plain: [],
  },
  {
    field: 'thinking_token_budget',
    model: 'thinking_token_budget',
    where: 'v1/worker/gpu/sample/sampler.py:257',
    bends: { thinking_token_budget: 0 },
    plain: [{ thinking_token_budget: null }],
  },
  {
    field: 'use_beam_search',
    model: 'use_beam_search',
    where: 'entrypoints/openai/chat_completion/protocol.py:717 to_beam_search_params',
    bends: { use_beam_search: true },
    plain: [{ use_beam_search: false }],
  },
  {
    field: 'watermarking',
    model: 'watermarking',
    where: 'v1/watermarking/gpu_sampler.py:53, config/vllm.py:1296',
    bends: { watermarking: true },
    plain: [{ watermarking: false }, { watermarking: null }],
  },
  {
    field: 'vllm_xargs',
    model: 'vllm_xargs',
    where: 'sampling_params.py:419 extra_args, v1/worker/gpu/sample/logits_processor/interface.py:126',
    bends: { vllm_xargs: { my_processor: 1 } },
    plain: [{ vllm_xargs: {} }],
  },
  {
    field: 'tools[1].function.strict',
    model: 'tools',
    where: 'parser/abstract_parser.py:513, tool_parsers/structural_tag_registry.py:186',
    bends: { tools: strictTools, tool_choice: 'auto' },
    plain: [{ tools: strictTools, tool_choice: 'none' }, { tools }],
  },
  {
    field: 'parallel_tool_calls',
    model: 'parallel_tool_calls',
    where: 'parser/abstract_parser.py:537',
    bends: { parallel_tool_calls: false, tools },
    plain: [{ parallel_tool_calls: false }, { parallel_tool_calls: false, tools, tool_choice: 'none' }],
  },
];

/** Sampling the run sets on a training call, whatever the harness asked (sampling.ts withRunSampling). */
const RUN_SETS = [
  'temperature',
  'top_p',
  'top_k',
  'min_p',
  'repetition_penalty',
  'presence_penalty',
  'frequency_penalty',
];

/** Fields that leave the sampled token's distribution alone, why, and a value to check that on. */
const NEUTRAL: Record<string, [why: string, value: unknown]> = {
  ignore_eos: ['sampling_params.py:334: generation goes on past EOS; no logit is masked', true],
  stop: ['a stop string ends the answer after a token is sampled', ['x']],
  stop_token_ids: ['ends the answer after the token (masked only under min_tokens)', [7]],
  include_stop_str_in_output: ['text only', true],
  repetition_detection: ['ends the answer early (sampling_params.py:434)', { max_pattern_size: 4 }],
  max_tokens: ['the length limit', 9],
  max_completion_tokens: ['the length limit', 9],
  max_output_tokens: ['the length limit', 9],
  max_tool_calls: ['built-in tools of the Responses loop', 1],
  length_penalty: ['beam search only', 2],
  n: ['siblings, each a sample', 2],
  seed: ['the random stream, not the distribution', 3],
  logprobs: ['what is returned', true],
  top_logprobs: ['what is returned', 5],
  prompt_logprobs: ['what is returned about the prompt', 1],
  logprob_token_ids: ['sampling_params.py:367: logprobs of these ids besides the sampled one', [1]],
  echo: ['the prompt in the answer', true],
  suffix: ['completions text after the answer', 'x'],
  skip_special_tokens: ['detokenizing', false],
  spaces_between_special_tokens: ['detokenizing', false],
  stream: ['delivery', true],
  stream_options: ['delivery', { include_usage: true }],
  stream_interval: ['delivery', 4],
  tools: ['rendered into the prompt; strict ones are checked above', tools],
  parallel_tool_calls: ['true is the default; false is checked above', true],
  reasoning_effort: ['a chat template kwarg (chat_completion/protocol.py:667): the prompt', 'low'],
  reasoning: ['Responses reasoning.effort: the prompt', { effort: 'low' }],
  include_reasoning: ['false is refused on training calls (sampling.ts refuseOnTraining)', true],
  chat_template: ['the prompt', '{{ x }}'],
  chat_template_kwargs: ['the prompt', { enable_thinking: false }],
  add_generation_prompt: ['the prompt', true],
  continue_final_message: ['the prompt (an assistant prefill)', true],
  add_special_tokens: ['the prompt', true],
  documents: ['the prompt', [{ title: 't', text: 'x' }]],
  messages: ['the prompt', [{ role: 'user', content: 'hi' }]],
  prompt: ['the prompt', 'hi'],
  input: ['the prompt', 'hi'],
  instructions: ['the prompt', 'be brief'],
  prompt_embeds: ['the prompt', 'AAAA'],
  truncate_prompt_tokens: ['the prompt', 10],
  truncation_side: ['the prompt', 'left'],
  truncation: ['the prompt', 'auto'],
  previous_response_id: ['the prompt (refused by the proxy: it keeps no responses)', null],
  previous_input_messages: ['the prompt', []],
  media_io_kwargs: ['the prompt', {}],
  mm_processor_kwargs: ['the prompt', {}],
  mm_payload: ['render endpoints only', 'none'],
  return_mm_kwargs: ['render endpoints only', false],
  return_token_offsets: ['render endpoints only', true],
  return_prompt_text: ['what is returned', true],
  return_tokens_as_token_ids: ['what is returned', true],
  return_token_ids: ['what is returned', true],
  return_weight_versions: ['what is returned', true],
  routed_experts_prompt_start: ['what is returned', 0],
  enable_response_messages: ['what is returned', true],
  include: ['what is returned', ['reasoning.encrypted_content']],
  kv_transfer_params: ['disaggregated serving', { a: 1 }],
  ec_transfer_params: ['disaggregated serving', { a: 1 }],
  cache_salt: ['the prefix cache', 'salt'],
  prompt_cache_key: ['the prefix cache', 'k'],
  prompt_cache_options: ['the prefix cache', {}],
  prompt_cache_retention: ['the prefix cache', '24h'],
  priority: ['scheduling', 1],
  service_tier: ['scheduling', 'flex'],
  background: ['scheduling', false],
  request_id: ['bookkeeping', 'r'],
  session_id: ['bookkeeping', 's'],
  user: ['bookkeeping', 'u'],
  safety_identifier: ['bookkeeping', 'u'],
  metadata: ['bookkeeping', { a: 'b' }],
  store: ['bookkeeping', false],
  model: ['which model', 'toy'],
  // vLLM 0.34 ignores the removed guided-decoding fields: entrypoints/serve/engine/protocol.py:21
  guided_json: ['ignored by vLLM 0.34 (serve/engine/protocol.py:21)', { type: 'object' }],
  guided_regex: ['ignored by vLLM 0.34 (serve/engine/protocol.py:21)', 'a+'],
  guided_choice: ['ignored by vLLM 0.34 (serve/engine/protocol.py:21)', ['a']],
  guided_grammar: ['ignored by vLLM 0.34 (serve/engine/protocol.py:21)', 'root ::= "a"'],
};

/** vLLM 0.34 entrypoints/openai/chat_completion/protocol.py:240-553, ChatCompletionRequest's fields. */
const CHAT =
  'messages model frequency_penalty logit_bias logprobs top_logprobs max_tokens max_completion_tokens n presence_penalty response_format seed stop stream stream_options temperature top_p tools tool_choice reasoning_effort thinking_token_budget include_reasoning parallel_tool_calls user use_beam_search top_k min_p repetition_penalty watermarking length_penalty stop_token_ids include_stop_str_in_output ignore_eos min_tokens skip_special_tokens spaces_between_special_tokens truncate_prompt_tokens truncation_side prompt_logprobs logprob_token_ids allowed_token_ids bad_words echo add_generation_prompt continue_final_message add_special_tokens documents chat_template chat_template_kwargs media_io_kwargs mm_processor_kwargs structured_outputs priority request_id session_id return_tokens_as_token_ids return_token_ids return_weight_versions routed_experts_prompt_start return_token_offsets return_prompt_text mm_payload return_mm_kwargs cache_salt kv_transfer_params ec_transfer_params vllm_xargs repetition_detection stream_interval';
/** vLLM 0.34 entrypoints/openai/completion/protocol.py:52-287, CompletionRequest's fields. */
const COMPLETIONS =
  'model prompt echo frequency_penalty logit_bias logprobs max_tokens n presence_penalty seed stop stream stream_options suffix temperature top_p user use_beam_search top_k min_p repetition_penalty watermarking length_penalty stop_token_ids include_stop_str_in_output ignore_eos min_tokens skip_special_tokens spaces_between_special_tokens truncate_prompt_tokens truncation_side allowed_token_ids prompt_logprobs logprob_token_ids bad_words prompt_embeds add_special_tokens response_format structured_outputs priority request_id session_id return_tokens_as_token_ids return_token_ids return_weight_versions routed_experts_prompt_start return_token_offsets mm_payload return_mm_kwargs cache_salt kv_transfer_params ec_transfer_params vllm_xargs repetition_detection thinking_token_budget stream_interval';
/** vLLM 0.34 entrypoints/openai/responses/protocol.py:250-470, ResponsesRequest's fields. */
const RESPONSES =
  'background include input instructions max_output_tokens max_tool_calls metadata model logit_bias parallel_tool_calls previous_response_id prompt reasoning include_reasoning service_tier store stream temperature text tool_choice tools top_logprobs top_p top_k min_p truncation user skip_special_tokens spaces_between_special_tokens include_stop_str_in_output presence_penalty frequency_penalty prompt_cache_key prompt_cache_options prompt_cache_retention safety_identifier watermarking request_id session_id media_io_kwargs mm_processor_kwargs priority mm_payload return_mm_kwargs cache_salt enable_response_messages previous_input_messages structured_outputs repetition_penalty seed stop stop_token_ids ignore_eos thinking_token_budget vllm_xargs kv_transfer_params ec_transfer_params chat_template_kwargs';

/** Each Responses field that bends in vLLM, a value that would, and the chat field it becomes (null: dropped). */
const RESPONSES_BECOME: [field: string, value: unknown, becomes: string | null][] = [
  ['text', { format: { type: 'json_object' } }, 'response_format'],
  ['tool_choice', 'required', 'tool_choice'],
  ['tools', [{ type: 'function', name: 'f', parameters: {}, strict: true }], 'tools[0].function.strict'],
  ['parallel_tool_calls', false, 'parallel_tool_calls'],
  ['logit_bias', { '7': 5 }, null],
  ['structured_outputs', { regex: 'a+' }, null],
  ['thinking_token_budget', 0, null],
  ['watermarking', true, null],
  ['vllm_xargs', { a: 1 }, null],
  ['stop_token_ids', [7], null],
];

describe('request fields that constrain decoding (vLLM 0.34)', () => {
  it.each(BENDING)('$field bends the distribution ($where)', ({ field, bends, plain }) => {
    expect(constrainedFields(bends)).toEqual([field]);
    for (const body of plain) expect(constrainedFields(body), JSON.stringify(body)).toEqual([]);
  });

  it.each(Object.entries(NEUTRAL))('%s leaves it alone: %s', (field, [, value]) => {
    expect(constrainedFields({ tools, [field]: value })).toEqual([]);
  });

  it.each([
    ['Chat Completions', CHAT],
    ['Completions', COMPLETIONS],
    ['Responses', RESPONSES],
  ])("every field of vLLM's %s request is classified", (_, fields) => {
    const known = new Set([
      ...BENDING.map((b) => b.model),
      ...RUN_SETS,
      ...Object.keys(NEUTRAL),
      ...RESPONSES_BECOME.map(([field]) => field),
    ]);
    expect(fields.split(' ').filter((f) => !known.has(f))).toEqual([]);
  });

  it('names the fields in a fixed order', () => {
    const all = Object.assign({}, ...BENDING.map((b) => b.bends));
    expect(constrainedFields({ ...all, tool_choice: 'required', tools: strictTools })).toEqual([
      'logit_bias',
      'allowed_token_ids',
      'bad_words',
      'min_tokens',
      'response_format',
      'structured_outputs',
      'tool_choice',
      'thinking_token_budget',
      'use_beam_search',
      'watermarking',
      'vllm_xargs',
      'tools[1].function.strict',
      'parallel_tool_calls',
    ]);
  });
});

describe("a Responses request's fields reach vLLM as chat fields, or not at all", () => {
  const base = { model: 'm', input: 'hi' };
  it.each(RESPONSES_BECOME)(
    'Responses %s %j reaches vLLM as chat %s (null: the proxy drops it)',
    (field, value, becomes) => {
      const withTools = field === 'tools' ? {} : { tools: [{ type: 'function', name: 'f', parameters: {} }] };
      const chat = responsesToChat(ResponsesRequest.parse({ ...base, ...withTools, [field]: value })) as Json;
      if (becomes) expect(constrainedFields(chat)).toContain(becomes);
      else {
        expect(chat).not.toHaveProperty(field);
        expect(constrainedFields(chat)).toEqual([]);
      }
    },
  );
});

describe('a constrained training call', () => {
  const refused = (body: Json, wire?: 'responses' | 'messages' | 'gemini') => {
    try {
      checkConstrained(body, 'refuse', wire);
    } catch (e) {
      return e as ProxyError;
    }
    throw new Error('not refused');
  };

  it('refuse names the field as the harness wrote it on a translated wire; record returns the fields', () => {
    const body = { response_format: { type: 'json_object' } };
    expect(checkConstrained(body, 'record', 'gemini')).toEqual(['response_format']);
    expect(checkConstrained({}, 'refuse')).toBeNull();
    expect(refused(body)).toMatchObject({ status: 400, param: 'response_format' });
    expect(refused(body, 'responses').param).toBe('text.format');
    expect(refused(body, 'gemini').param).toBe('generationConfig.responseMimeType');
    expect(refused(body)).toBeInstanceOf(ProxyError);
    const single = { parallel_tool_calls: false, tools };
    expect(refused(single, 'messages').param).toBe('tool_choice.disable_parallel_tool_use');
    expect(refused({ tools: strictTools }).param).toBe('tools[1].function.strict');
    expect(refused({ tools: strictTools }, 'responses').param).toBe('tools');
  });

  it('is recorded with the fields its backend got: a bridged token prompt has no tool parser, nor what it left out', () => {
    const plan = {
      source: 'run' as const,
      overridden: null,
      constrained: ['min_tokens', 'parallel_tool_calls'],
    };
    const chat = { messages: [], tools, parallel_tool_calls: false, min_tokens: 2 };
    expect(callSampling(chat, plan).constrained).toEqual(['min_tokens', 'parallel_tool_calls']);
    expect(callSampling({ prompt: [1, 2], min_tokens: 2 }, plan).constrained).toEqual(['min_tokens']);
    expect(callSampling({ prompt: [1, 2] }, plan)).not.toHaveProperty('constrained');
    // not a training call: nothing is marked
    expect(callSampling(chat, { source: 'request', overridden: null })).not.toHaveProperty('constrained');
  });
});
