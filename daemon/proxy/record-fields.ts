// The token fields of a call's record, from a (whole or assembled) backend answer.
import type { NewLlmCall, UntrainableStatus } from '../protocol/entities';
import { type BackendKind, choiceIndexes, type Tokens, tokensOf } from './assemble';
import type { Json } from './json';

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
