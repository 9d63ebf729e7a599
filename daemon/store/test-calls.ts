// Llm calls for tests (store.test.ts, the end-to-end tests, unit tests of what reads calls): a
// complete NewLlmCall, or a stored LlmCall, with defaults.
import type { LlmCall, NewLlmCall } from '../protocol/entities';

/** A call as the proxy hands it over, with sensible defaults. */
export function newCall(patch: Partial<NewLlmCall> = {}): NewLlmCall {
  return {
    rollout_id: null,
    attempt_id: null,
    recording_id: null,
    wire_api: 'chat',
    stream: false,
    request: { model: 'm', messages: [{ role: 'user', content: 'hi' }] },
    backend_request: null,
    response: { choices: [{ message: { role: 'assistant', content: 'hello' } }] },
    prompt_ids: [1, 2, 3],
    response_ids: [4, 5],
    response_logprobs: [-0.5, -0.25],
    token_source: 'backend',
    bridge: null,
    sampling: null,
    finish_reason: 'stop',
    usage: { prompt_tokens: 3, completion_tokens: 2 },
    model: 'm',
    model_version: 0,
    backend: 'reference',
    status: 'ok',
    error: null,
    http_status: 200,
    tags: [],
    queue_ms: 0.5,
    ttft_ms: 1.5,
    total_ms: 3,
    ...patch,
  };
}

/** A call as the store returns it (id, seq, created_at added), with the same defaults. */
export function storedCall(patch: Partial<LlmCall> = {}): LlmCall {
  return {
    id: 'call_1',
    seq: 0,
    created_at: '2026-12-02T00:00:00.000Z',
    ...newCall(),
    sampling: null,
    ...patch,
  };
}
