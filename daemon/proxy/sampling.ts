// Sampling on proxied calls: a run's rollouts sample with the run's parameters (neutral unless its
// algorithm.sampling says otherwise), whatever the harness asked for, and every call records the
// parameters its backend got (LlmCall.sampling).
//
// Why the proxy sends every value instead of leaving them out: vLLM fills a field a request omits from
// the model's generation_config.json (Qwen3: temperature 0.6, top_k 20, top_p 0.95), vLLM 0.34
// config/model.py:1884 get_diff_sampling_param, used as `default_sampling_params` by
// entrypoints/openai/chat_completion/protocol.py:750 to_sampling_params ("user -> server default ->
// OpenAI default"), and returns the logprobs of the raw distribution, before temperature and top-k/p
// (logprobs_mode "raw_logprobs", config/model.py:305; v1/worker/gpu/sample/sampler.py:170). A rollout
// sampled at T 0.6 with top-k 20 would be trained as if drawn from T 1: off-policy, silently.
import { NEUTRAL_SAMPLING, type RunSampling, runSampling } from '../protocol/algorithm';
import type { CallSampling, WireApi } from '../protocol/entities';
import { checkConstrained, constrainedFields } from './constrained';
import { ProxyError } from './errors';
import type { Json } from './json';
import type { Scope } from './scope';

const KEYS = Object.keys(NEUTRAL_SAMPLING) as (keyof RunSampling)[];

/** A call's sampling plan with nothing replaced: the harness's own values. */
export const AS_REQUESTED: SamplingPlan = { source: 'request', overridden: null };

/** What a call's record says about its sampling, short of the body the backend got. */
export interface SamplingPlan {
  source: CallSampling['source'];
  /** The harness's own values that the run's replaced, by field (null: none). */
  overridden: Record<string, unknown> | null;
  /** The request fields that constrained decoding (constrained.ts), on a training call that has any. */
  constrained?: string[];
}

/**
 * The run's sampling when the call is training traffic (a rollout of a run, on the run's backends), or
 * null: recordings and pass-through calls sample as the harness asked.
 */
export function trainingSampling(scope: Scope | null): RunSampling | null {
  if (!scope?.runConfig || scope.recording || scope.upstream) return null;
  return runSampling(scope.runConfig.algorithm ?? {});
}

/**
 * The body to send for a call of `scope` (`sent`: the harness's, with the backend extras, translated
 * from `wire` if that is not chat or completions) and whose sampling it carries. Throws ProxyError 400
 * for a training call that would hide its tokens, or constrain its decoding where the run refuses that.
 */
export function sampledBody(
  scope: Scope | null,
  sent: Json,
  wire?: WireApi,
): { body: Json; plan: SamplingPlan } {
  const run = trainingSampling(scope);
  if (!run) return { body: sent, plan: AS_REQUESTED };
  refuseOnTraining(sent);
  const constrained = checkConstrained(
    sent,
    scope?.runConfig?.algorithm?.sampling?.constrained ?? 'record',
    wire,
  );
  const out = withRunSampling(sent, run);
  if (constrained) out.plan.constrained = constrained;
  return out;
}

/** top_k 0 and -1 both mean no truncation (vLLM 0.34 sampling_params.py:685). */
function same(key: keyof RunSampling, a: unknown, b: number): boolean {
  if (key === 'top_k' && typeof a === 'number') return a <= 0 ? b <= 0 : a === b;
  return a === b;
}

/**
 * A training call's backend body: the run's sampling in place of the harness's own (which the record
 * keeps as `overridden`). Temperature, top-k/p, min-p and the penalties change the distribution the
 * recorded logprobs must describe; seed and max_tokens do not, and stay as the harness sent them.
 */
export function withRunSampling(body: Json, run: RunSampling): { body: Json; plan: SamplingPlan } {
  const out: Json = Object.assign({}, body);
  let overridden: Record<string, unknown> | null = null;
  for (const k of KEYS) {
    const asked = body[k];
    if (asked != null && !same(k, asked, run[k])) {
      overridden ??= {};
      overridden[k] = asked;
    }
    out[k] = run[k];
  }
  return { body: out, plan: { source: 'run', overridden } };
}

/**
 * Fields a training call may not carry. `include_reasoning: false` makes vLLM drop the token ids and
 * logprobs of the whole answer (entrypoints/openai/chat_completion/serving.py:1032 suppress_metadata,
 * stream_processor.py:50 hide_metadata), leaving nothing to train on: refused, naming the field.
 */
export function refuseOnTraining(body: Json): void {
  if (body.include_reasoning === false)
    throw new ProxyError(
      400,
      "include_reasoning: false makes vLLM leave out the answer's token ids and logprobs, which a training rollout needs; leave it out (true is the default)",
      'include_reasoning',
      'invalid_request',
    );
}

const num = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);
const int = (v: unknown): number | null => (Number.isInteger(v) ? (v as number) : null);

/**
 * The sampling parameters in `sent`, the body the backend got (chat, completions, a bridged token
 * prompt, or a pass-through Messages / Responses body); null where it has none.
 */
export function callSampling(sent: Json, plan: SamplingPlan): CallSampling {
  const b = sent && typeof sent === 'object' && !Array.isArray(sent) ? sent : {};
  return {
    temperature: num(b.temperature),
    top_p: num(b.top_p),
    top_k: int(b.top_k),
    min_p: num(b.min_p),
    repetition_penalty: num(b.repetition_penalty),
    presence_penalty: num(b.presence_penalty),
    frequency_penalty: num(b.frequency_penalty),
    seed: int(b.seed),
    max_tokens: int(b.max_completion_tokens ?? b.max_tokens ?? b.max_output_tokens),
    source: plan.source,
    overridden: plan.overridden,
    ...constrainedOf(b, plan),
  };
}

/**
 * The constrained fields of a training call as its backend got it: a chat body the bridge sent as a
 * token prompt to /v1/completions keeps only what that endpoint samples with, and no tool parser adds
 * a structural tag there (vLLM 0.34 renderers/online_renderer.py:863 parses chat and Responses only).
 */
function constrainedOf(sent: Json, plan: SamplingPlan): { constrained?: string[] } {
  if (!plan.constrained) return {};
  const fields = constrainedFields(sent);
  return fields.length ? { constrained: fields } : {};
}
