// The token fields of a call's record, from a (whole or assembled) backend answer: its tokens read out
// of the answer, its status and, with several choices, each choice's, all built in one place.
import type { NewLlmCall, UntrainableStatus } from '../protocol/entities';
import type { BackendKind } from './assemble';
import type { Json } from './json';

export interface Tokens {
  prompt_ids: number[] | null;
  response_ids: number[] | null;
  response_logprobs: number[] | null;
  finish_reason: string | null;
  usage: { prompt_tokens: number; completion_tokens: number } | null;
}

const isIds = (v: unknown): v is number[] => Array.isArray(v);

/**
 * Token ids, logprobs, finish reason and usage of choice `index` (default 0) of a (non-streaming or
 * assembled) response. The usage is the whole response's.
 */
export function tokensOf(json: Json, kind: BackendKind, index = 0): Tokens {
  const c0: Json | undefined = Array.isArray(json.choices)
    ? (json.choices.find((c: Json) => c?.index === index) ?? (index === 0 ? json.choices[0] : undefined))
    : undefined;
  const prompt = isIds(json.prompt_token_ids)
    ? json.prompt_token_ids
    : isIds(c0?.prompt_token_ids)
      ? c0.prompt_token_ids
      : null;
  const response = isIds(c0?.token_ids) ? c0.token_ids : null;
  let logprobs: number[] | null = null;
  if (kind === 'chat' && Array.isArray(c0?.logprobs?.content))
    logprobs = c0.logprobs.content.map((e: Json) => Number(e?.logprob));
  else if (kind === 'completions' && Array.isArray(c0?.logprobs?.token_logprobs))
    logprobs = c0.logprobs.token_logprobs.map((x: unknown) => Number(x));
  const u = json.usage;
  let usage: Tokens['usage'] = null;
  if (u && typeof u.prompt_tokens === 'number')
    usage = { prompt_tokens: u.prompt_tokens, completion_tokens: Number(u.completion_tokens ?? 0) };
  else if (prompt && response) {
    let completion = 0;
    for (const c of json.choices as Json[]) completion += isIds(c.token_ids) ? c.token_ids.length : 0;
    usage = { prompt_tokens: prompt.length, completion_tokens: completion };
  }
  return {
    prompt_ids: prompt,
    response_ids: response,
    response_logprobs: logprobs,
    finish_reason: c0?.finish_reason ?? null,
    usage,
  };
}

/** The choice indexes of a response, ascending ([0] when it has none or one). */
export function choiceIndexes(json: Json): number[] {
  if (!Array.isArray(json.choices) || json.choices.length <= 1) return [0];
  const indexes = (json.choices as Json[]).map((c) => (typeof c?.index === 'number' ? c.index : 0));
  return [...new Set(indexes)].sort((a, b) => a - b);
}

/**
 * The record fields of `parts`, later ones winning, as `{...a, ...b, c}` would give. Not written as a
 * spread: V8 (Node 20) defines each property that follows a spread in an object literal through a
 * runtime call (about 20 µs for a call's record fields on this machine); Object.assign takes < 1 µs.
 */
export function fieldsOf(...parts: Partial<NewLlmCall>[]): Partial<NewLlmCall> {
  return Object.assign({}, ...parts);
}

/** The record's token fields; an answer with no response ids is recorded so, streamed (`[]`) or not (`null`). */
export function tokenFields(t: Tokens, source: 'backend' | 'bridge' = 'backend'): Partial<NewLlmCall> {
  const response = t.response_ids?.length ? t.response_ids : null;
  return {
    prompt_ids: t.prompt_ids,
    response_ids: response,
    response_logprobs: t.response_logprobs,
    finish_reason: t.finish_reason,
    usage: t.usage,
    token_source: t.prompt_ids && response ? source : 'text',
  };
}

/**
 * The status and error of a call the backend answered (200) with `json`, whose choice's tokens are
 * `t`: `ok`, or what the answer lacks for training (UntrainableStatus). `asked`: the proxy asked the
 * backend for token ids and logprobs; vLLM 0.34 answers `return_token_ids` with each choice's
 * token_ids and the response's prompt_token_ids (vllm/entrypoints/openai/chat_completion/serving.py
 * lines 1078-1082 and 1158-1160; per chunk at 790 when streamed). A provider's answer (not asked)
 * is text only, and ok.
 * Streamed and whole answers are judged alike: both are judged assembled.
 */
export function answerStatus(json: Json, t: Tokens, asked: boolean): Pick<NewLlmCall, 'status' | 'error'> {
  const untrainable = (status: UntrainableStatus, why: string) => ({
    status,
    error: `not trainable: ${why}`,
  });
  if (!asked) return { status: 'ok', error: null };
  if (!Array.isArray(json.choices) || json.choices.length === 0)
    return untrainable('no_choices', 'the backend answered with no choices');
  const missing = [!t.prompt_ids && 'prompt', !t.response_ids?.length && 'response'].filter(Boolean);
  if (missing.length > 0)
    return untrainable('no_token_ids', `the backend's answer carries no ${missing.join(' or ')} token ids`);
  const ids = t.response_ids?.length ?? 0;
  if (t.response_logprobs && t.response_logprobs.length !== ids)
    return untrainable(
      'logprobs_mismatch',
      `the backend's answer has ${ids} response token ids but ${t.response_logprobs.length} logprobs`,
    );
  return { status: 'ok', error: null };
}

/**
 * A (whole or assembled) answer's record fields: its tokens and status (answerStatus), and with
 * several choices each choice's (choiceFields).
 */
export function answerFields(
  json: Json,
  kind: BackendKind,
  source: 'backend' | 'bridge',
  asked: boolean,
): { fields: Partial<NewLlmCall>; choices: Partial<NewLlmCall>[] | null } {
  const t = tokensOf(json, kind);
  return {
    fields: Object.assign(tokenFields(t, source), answerStatus(json, t, asked)),
    choices: choiceFields(json, kind, source, asked),
  };
}

/**
 * With several choices (n > 1): the token fields and status of each, tagged `choice:<i>`; null for
 * one choice.
 */
export function choiceFields(
  json: Json,
  kind: BackendKind,
  source: 'backend' | 'bridge',
  asked = true,
): Partial<NewLlmCall>[] | null {
  const indexes = choiceIndexes(json);
  if (indexes.length <= 1) return null;
  return indexes.map((i) => {
    const t = tokensOf(json, kind, i);
    const f = Object.assign(tokenFields(t, source), answerStatus(json, t, asked));
    if (t.usage && t.response_ids)
      f.usage = { prompt_tokens: t.usage.prompt_tokens, completion_tokens: t.response_ids.length };
    f.tags = [`choice:${i}`];
    return f;
  });
}
