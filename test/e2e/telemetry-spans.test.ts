// The span export's shapes from store events, sent to a loopback OTLP/HTTP receiver: each attempt of a
// retried rollout holds its own calls, and a training step is a span carrying its metrics.
import { describe, expect, it } from 'vitest';
import type { NewLlmCall, Rollout } from '../../daemon/protocol/entities';
import { SpanExport } from '../../daemon/telemetry/traces';
import { attr, startReceiver } from '../helpers/otlp-receiver';
import { waitFor } from '../helpers/wait';

const now = new Date().toISOString();
const rollout = (over: Partial<Rollout>): Rollout => ({
  id: 'r1',
  kind: 'run',
  run_id: 'run1',
  group_id: 'g1',
  task_id: 't1',
  recording_id: null,
  input: null,
  status: 'queued',
  attempt_count: 0,
  max_attempts: 3,
  reward: null,
  error: null,
  stats: null,
  created_at: now,
  updated_at: now,
  started_at: null,
  finished_at: null,
  ...over,
});
const call = (attempt: string): NewLlmCall =>
  ({
    rollout_id: 'r1',
    attempt_id: attempt,
    recording_id: null,
    wire_api: 'completions',
    stream: false,
    request: { model: 'qwen' },
    token_source: 'bridge',
    usage: { prompt_tokens: 10, completion_tokens: 3 },
    finish_reason: 'length',
    model: 'qwen',
    model_version: 4,
    status: 'ok',
    total_ms: 5,
    queue_ms: 1,
    bridge: null,
  }) as unknown as NewLlmCall;

describe('span shapes', () => {
  it('a retried rollout has one span per attempt, each holding its calls; a step span carries the metrics', async () => {
    const receiver = await startReceiver();
    const spans = new SpanExport({
      endpoint: receiver.url,
      protocol: 'http/json',
      content: false,
      maxQueue: 100,
      delayMs: 20,
      version: 'test',
    });
    try {
      spans.onEvent({ type: 'rollout', rollout: rollout({}) });
      spans.onEvent({ type: 'rollout', rollout: rollout({ status: 'running', attempt_count: 1 }) });
      spans.onCall(call('a1'));
      spans.onEvent({ type: 'rollout', rollout: rollout({ status: 'running', attempt_count: 2 }) });
      spans.onCall(call('a2'));
      spans.onEvent({
        type: 'rollout',
        rollout: rollout({
          status: 'succeeded',
          attempt_count: 2,
          reward: 1,
          finished_at: new Date().toISOString(),
        }),
      });
      spans.onEvent({
        type: 'run_metrics',
        metrics: {
          run_id: 'run1',
          step: 7,
          metrics: { loss: 0.5, prob_correlation: 0.98, kl: null },
          created_at: now,
        },
      });
      await spans.flush();
      await waitFor('the spans', () => receiver.spans().length >= 6, 10_000);
      const all = receiver.spans();
      const root = all.find((s) => s.name === 'rollout r1')!;
      const attempts = ['attempt 1', 'attempt 2'].map((n) => all.find((s) => s.name === n)!);
      const calls = all.filter((s) => s.name === 'text_completion qwen');
      expect(attempts.map((a) => a.parentSpanId)).toEqual([root.spanId, root.spanId]);
      expect(attempts.map((a) => attr(a, 'harness_rl.attempt.status'))).toEqual(['retried', 'succeeded']);
      expect(calls.map((c) => c.parentSpanId).sort()).toEqual(attempts.map((a) => a.spanId).sort());
      expect(calls.map((c) => attr(c, 'harness_rl.attempt.id')).sort()).toEqual(['a1', 'a2']);
      expect(attr(calls[0]!, 'gen_ai.response.finish_reasons')).toEqual(['length']);
      expect(attr(calls[0]!, 'harness_rl.model_version')).toBe(4);
      expect(attr(root, 'harness_rl.run.id')).toBe('run1');
      expect(attr(root, 'harness_rl.reward')).toBe(1);
      const step = all.find((s) => s.name === 'training step 7')!;
      expect(step.parentSpanId ?? '').toBe('');
      expect(attr(step, 'harness_rl.metric.loss')).toBe(0.5);
      expect(attr(step, 'harness_rl.metric.prob_correlation')).toBe(0.98);
      expect(attr(step, 'harness_rl.metric.kl')).toBeUndefined();
    } finally {
      await spans.close();
      await receiver.close();
    }
  });
});
