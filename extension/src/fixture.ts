// Rollouts as GET /api/rollouts/:id returns them. capturedRollout(): a real one from a demo run
// (fixtures/*.json, written by test/vscode/capture-fixture.ts). syntheticRollout(): built with the
// reference engine's real tokenizer and chat template: two chat calls that merge token-exactly, then
// a third whose harness rewrote the history (a prefix break).
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { applyChatTemplate, END_ID, encode } from '../../daemon/engine/tokenizer';
import type { RolloutDetail } from '../../daemon/protocol/api';
import type { LlmCall } from '../../daemon/protocol/entities';

const T = '2026-12-02T12:00:00.000Z';

function call(
  seq: number,
  messages: { role: string; content: string }[],
  answer: string,
  extra: Partial<LlmCall> = {},
): LlmCall {
  const prompt = applyChatTemplate(messages, true);
  const response = [...encode(answer), END_ID];
  return {
    id: `call_${seq}`,
    rollout_id: 'ro_fixture',
    attempt_id: 'at_1',
    recording_id: null,
    seq,
    wire_api: 'chat',
    stream: false,
    request: { model: 'reference', messages },
    backend_request: null,
    response: {
      id: `chatcmpl-${seq}`,
      object: 'chat.completion',
      choices: [{ index: 0, message: { role: 'assistant', content: answer }, finish_reason: 'stop' }],
    },
    prompt_ids: prompt,
    response_ids: response,
    // a deterministic spread of likely and unlikely tokens for the heat map
    response_logprobs: response.map((_, i) => -((i * 37) % 11) / 3),
    token_source: 'backend',
    bridge: null,
    sampling: null,
    finish_reason: 'stop',
    usage: { prompt_tokens: prompt.length, completion_tokens: response.length },
    model: 'reference',
    model_version: 3,
    backend: 'reference',
    status: 'ok',
    error: null,
    http_status: 200,
    tags: [],
    queue_ms: 1.5,
    ttft_ms: 12,
    total_ms: 48,
    created_at: T,
    ...extra,
  };
}

/** A real rollout of the demo run (reference engine), with its group's rewards, when captured. */
export function capturedRollout(): {
  rollout: RolloutDetail;
  siblings: { id: string; group_id: string | null; reward: number | null }[];
} | null {
  const file = fileURLToPath(new URL('./fixtures/rollout.json', import.meta.url));
  const group = fileURLToPath(new URL('./fixtures/group.json', import.meta.url));
  if (!existsSync(file) || !existsSync(group)) return null;
  return {
    rollout: JSON.parse(readFileSync(file, 'utf8')),
    siblings: JSON.parse(readFileSync(group, 'utf8')),
  };
}

export function syntheticRollout(): RolloutDetail {
  const system = { role: 'system', content: 'You are a careful calculator. Answer with a number.' };
  const user = { role: 'user', content: 'What is 12 * 7?' };
  const a1 = 'Let me think: 12 * 7 = 84.';
  const follow = { role: 'user', content: 'And plus 16?' };
  const a2 = '84 + 16 = 100';
  const calls = [
    call(0, [system, user], a1),
    call(1, [system, user, { role: 'assistant', content: a1 }, follow], a2),
    // the harness dropped the system prompt: the third prompt is no continuation (prefix break)
    call(
      2,
      [
        user,
        { role: 'assistant', content: a1 },
        follow,
        { role: 'assistant', content: a2 },
        { role: 'user', content: 'Final answer only.' },
      ],
      '100',
    ),
  ];
  return {
    id: 'ro_fixture',
    kind: 'run',
    run_id: 'run_fixture',
    group_id: 'gr_fixture',
    task_id: 'ta_1',
    recording_id: null,
    input: { question: 'What is 12 * 7 + 16?', answer: 100 },
    status: 'succeeded',
    attempt_count: 1,
    max_attempts: 2,
    reward: 1,
    error: null,
    stats: { samples: 2, prefix_breaks: 1, mask_tokens: 40, truncations: 0 },
    created_at: T,
    updated_at: T,
    started_at: T,
    finished_at: T,
    attempts: [
      {
        id: 'at_1',
        rollout_id: 'ro_fixture',
        index: 1,
        status: 'succeeded',
        worker: 'w1',
        error: null,
        started_at: T,
        heartbeat_at: T,
        finished_at: T,
      },
    ],
    rewards: [
      { id: 'rw_1', rollout_id: 'ro_fixture', value: 0.5, source: 'harness', detail: null, created_at: T },
      {
        id: 'rw_2',
        rollout_id: 'ro_fixture',
        value: 1,
        source: 'verifier',
        detail: { passed: 4, failed: 0 },
        created_at: T,
      },
    ],
    llm_calls: calls,
    prefix_breaks: [],
    tool_runs: [],
  };
}
