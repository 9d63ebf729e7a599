import { describe, expect, it } from 'vitest';
import type { RolloutDetail } from '../../daemon/protocol/api';
import type { LlmCall, Recording } from '../../daemon/protocol/entities';
import { storedCall } from '../../daemon/store/test-calls';
import { samplesJsonl } from './export';
import { recordingSamples, recordingTask } from './recordingExport';
import { viewSamples } from './samples';

const recording: Recording = {
  id: 'rec_1',
  name: 'fix the tests',
  status: 'stopped',
  upstream: { kind: 'vllm' },
  rollout_id: 'ro_1',
  created_at: '2026-12-02T00:00:00.000Z',
  stopped_at: '2026-12-02T00:01:00.000Z',
};

function call(seq: number, request: unknown, over: Partial<LlmCall> = {}): LlmCall {
  return storedCall({
    id: `call_${seq}`,
    rollout_id: 'ro_1',
    recording_id: 'rec_1',
    seq,
    wire_api: 'messages',
    request,
    response: null,
    prompt_ids: [1, 2, 3 + seq * 10],
    response_ids: [4, 5],
    response_logprobs: [-0.1, -0.2],
    usage: null,
    backend: null,
    ...over,
  });
}

function detail(calls: LlmCall[], reward: number | null): RolloutDetail {
  return {
    id: 'ro_1',
    kind: 'recording',
    run_id: null,
    group_id: null,
    task_id: null,
    recording_id: 'rec_1',
    input: null,
    status: 'succeeded',
    attempt_count: 1,
    max_attempts: 1,
    reward,
    error: null,
    stats: null,
    created_at: '2026-12-02T00:00:00.000Z',
    updated_at: '2026-12-02T00:00:00.000Z',
    started_at: null,
    finished_at: null,
    attempts: [],
    rewards: [],
    llm_calls: calls,
    prefix_breaks: [],
    tool_runs: [],
  };
}

describe('a recording turned into a task', () => {
  it('keeps the opening prompt of the first main call, skipping side calls, with its source and reward', () => {
    const side = call(0, { messages: [{ role: 'user', content: 'title this' }] }, { tags: ['side'] });
    const main = call(1, {
      system: 'You are a coding agent.',
      messages: [
        { role: 'user', content: 'fix the failing test' },
        { role: 'assistant', content: 'looking' },
        { role: 'user', content: 'go on' },
      ],
    });
    const task = recordingTask(recording, detail([main, side], 1));
    expect(task).toEqual({
      wire_api: 'messages',
      system: 'You are a coding agent.',
      messages: [{ role: 'user', content: 'fix the failing test' }],
      source: { recording_id: 'rec_1', name: 'fix the tests', rollout_id: 'ro_1' },
      reward: 1,
    });
  });

  it('reads Responses input (a string or items up to the first function call) and instructions', () => {
    const asString = call(
      0,
      { instructions: 'be brief', input: 'list the files' },
      { wire_api: 'responses' },
    );
    expect(recordingTask(recording, detail([asString], null))).toMatchObject({
      system: 'be brief',
      messages: [{ role: 'user', content: 'list the files' }],
    });
    const items = call(0, {
      input: [
        { role: 'user', content: 'run ls' },
        { type: 'function_call', name: 'shell', arguments: '{}' },
      ],
    });
    expect(recordingTask(recording, detail([items], null))?.messages).toEqual([
      { role: 'user', content: 'run ls' },
    ]);
  });

  it('gives nothing when no call succeeded', () => {
    expect(recordingTask(recording, detail([call(0, { messages: [] }, { status: 'error' })], 1))).toBeNull();
  });
});

describe('a recording exported as samples', () => {
  it('merges the calls that extend each other into one sample once the recording is rated', () => {
    const first = call(0, {}, { prompt_ids: [1, 2], response_ids: [3] });
    const second = call(
      1,
      {},
      { prompt_ids: [1, 2, 3, 9], response_ids: [4, 5], response_logprobs: [-1, -2] },
    );
    const { text, samples } = recordingSamples(detail([first, second], 1));
    const lines = text
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(samples).toBe(1);
    expect(lines[0].input_ids).toEqual([1, 2, 3, 9, 4, 5]);
    expect(lines[0].loss_mask).toEqual([0, 0, 1, 0, 1, 1]);
    expect(lines.at(-1).summary).toMatchObject({ trajectories: 1, samples: 1, prefix_breaks: 0 });
  });
});

describe('an imported session exported', () => {
  const imported = (seq: number) =>
    call(
      seq,
      { messages: [{ role: 'user', content: 'go' }] },
      { token_source: 'import', response_logprobs: null },
    );

  it('as a recording gives its samples (asked for), while a run export of the same calls leaves them out', () => {
    const d = detail([imported(0), imported(1)], 1);
    expect(recordingSamples(d).samples).toBe(2);
    const run = samplesJsonl(null, [d]);
    expect(run.samples).toBe(0);
    expect(JSON.parse(run.text.trim().split('\n').at(-1)!).summary.trajectories).toBe(1);
  });

  it("shows its token view in the recording's trajectory", () => {
    const view = viewSamples(detail([imported(0)], 1), null, []);
    expect(view.samples?.map((s) => s.loss_mask.filter((m) => m === 1).length)).toEqual([2]);
  });
});
