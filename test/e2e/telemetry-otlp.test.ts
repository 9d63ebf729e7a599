// OTLP span export from the real daemon to a loopback OTLP/HTTP receiver: the official exporter's JSON
// encoding decoded here (rollout trace, LLM-call child spans with GenAI attributes), its protobuf
// encoding received as protobuf, content only when turned on (and redacted), a full queue dropped and counted.
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeVllm, startFakeVllm } from '../fixtures/fake-vllm';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon';
import { attr, startReceiver } from '../helpers/otlp-receiver';
import { waitFor } from '../helpers/wait';

let fake: FakeVllm;
beforeAll(async () => {
  fake = await startFakeVllm({ model: 'toy' });
});
afterAll(async () => {
  await fake?.close();
});

async function chat(daemon: TestDaemon, content: string[]) {
  const { id, key, openai_base_url } = (await daemon.api('POST', '/api/rollouts', {})).body;
  const openai = new OpenAI({ baseURL: openai_base_url, apiKey: key, maxRetries: 0 });
  for (const text of content)
    await openai.chat.completions.create({ model: 'toy', messages: [{ role: 'user', content: text }] });
  return id as string;
}

describe('OTLP export', () => {
  it('a rollout is a trace: its LLM calls are CLIENT child spans named and attributed per the GenAI conventions, without content', async () => {
    const receiver = await startReceiver();
    const daemon = await startTestDaemon({
      backends: [fake.url],
      config: {
        otlp: { endpoint: receiver.url, protocol: 'http/json', delay_ms: 50, headers: { 'x-team': 'rl' } },
      },
    });
    try {
      const id = await chat(daemon, ['first question', 'second question']);
      expect((await daemon.api('POST', `/api/rollouts/${id}/reward`, { value: 0.75 })).status).toBeLessThan(
        300,
      );
      expect((await daemon.api('POST', `/api/rollouts/${id}/complete`, {})).status).toBe(200);
      await waitFor(
        'the rollout span',
        () => receiver.spans().some((s) => s.name === `rollout ${id}`),
        10_000,
      );
      const spans = receiver.spans();
      const root = spans.find((s) => s.name === `rollout ${id}`)!;
      expect(root.parentSpanId ?? '').toBe('');
      expect(attr(root, 'harness_rl.reward')).toBe(0.75);
      expect(attr(root, 'harness_rl.rollout.status')).toBe('succeeded');
      const calls = spans.filter((s) => s.name === 'chat toy');
      expect(calls).toHaveLength(2);
      for (const call of calls) {
        expect(call.traceId).toBe(root.traceId);
        // Its parent is the rollout, or the attempt span under it.
        const parent = spans.find((s) => s.spanId === call.parentSpanId)!;
        expect(parent.spanId === root.spanId || parent.parentSpanId === root.spanId).toBe(true);
        expect(call.kind).toBe(3); // SPAN_KIND_CLIENT
        expect(attr(call, 'gen_ai.operation.name')).toBe('chat');
        expect(attr(call, 'gen_ai.request.model')).toBe('toy');
        expect(attr(call, 'gen_ai.usage.input_tokens')).toBeGreaterThan(0);
        expect(attr(call, 'gen_ai.usage.output_tokens')).toBeGreaterThan(0);
        expect(attr(call, 'gen_ai.response.finish_reasons')).toEqual(['stop']);
        expect(attr(call, 'harness_rl.rollout.id')).toBe(id);
        expect(attr(call, 'harness_rl.token_source')).toBe('backend');
        expect(attr(call, 'gen_ai.input.messages')).toBeUndefined();
      }
      // The second call's history rewrote the first turn: a prefix break the bridge saw.
      calls.sort((a, b) => Number(BigInt(a.startTimeUnixNano) - BigInt(b.startTimeUnixNano)));
      expect(calls.map((c) => attr(c, 'harness_rl.prefix_break'))).toEqual([false, true]);
      expect(attr(calls[1]!, 'harness_rl.prefix_break.kind')).toBe('content_edited');
      expect(receiver.posts[0]!.headers['x-team']).toBe('rl');
      const metrics = await fetch(`${daemon.url}/metrics`, {
        headers: { authorization: `Bearer ${daemon.token}` },
      });
      expect(await metrics.text()).toMatch(/harness_rl_otlp_spans\{state="exported"\} [1-9]/);
    } finally {
      await daemon.close();
      await receiver.close();
    }
  });

  it('with content turned on the messages are exported redacted, and the default protocol is protobuf', async () => {
    const receiver = await startReceiver();
    const daemon = await startTestDaemon({
      backends: [fake.url],
      config: { otlp: { endpoint: receiver.url, content: true, delay_ms: 50 } },
    });
    try {
      await chat(daemon, [`my token is ${daemon.token}`]);
      await waitFor('an export', () => receiver.posts.length > 0, 10_000);
      const post = receiver.posts[0]!;
      expect(post.contentType).toBe('application/x-protobuf');
      const bytes = post.body.toString('latin1');
      expect(bytes).toContain('gen_ai.input.messages');
      expect(bytes).toContain('my token is');
      expect(bytes).not.toContain(daemon.token);
    } finally {
      await daemon.close();
      await receiver.close();
    }
  });

  it('a receiver that never answers slows no call: spans past the queue are dropped and counted in /metrics', async () => {
    const receiver = await startReceiver(false);
    const daemon = await startTestDaemon({
      backends: [fake.url],
      config: { otlp: { endpoint: receiver.url, protocol: 'http/json', max_queue: 2, delay_ms: 10 } },
    });
    try {
      const t0 = performance.now();
      await chat(daemon, ['a', 'b', 'c', 'd', 'e', 'f']);
      expect(performance.now() - t0).toBeLessThan(5000);
      const text = await (
        await fetch(`${daemon.url}/metrics`, { headers: { authorization: `Bearer ${daemon.token}` } })
      ).text();
      const dropped = Number(/harness_rl_otlp_spans\{state="dropped"\} (\d+)/.exec(text)?.[1]);
      expect(dropped).toBeGreaterThanOrEqual(4);
    } finally {
      await daemon.close();
      await receiver.close();
    }
  }, 30_000);
});
