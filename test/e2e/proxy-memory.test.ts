// Long runs must not grow the daemon's heap: every per-rollout cache (the token bridge's memory, the
// scopes, backend affinity, the store's chain bases) stays within its byte budget, and a rollout's
// entries go when it finishes, fails or is cancelled, or when its recording stops.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SqlStore } from '../../daemon/store/sql-store';
import { type FakeVllm, startFakeVllm } from '../fixtures/fake-vllm';
import { startTestProxy, type TestProxy } from './proxy-setup';

const BUDGET = 96 * 1024;
let fake: FakeVllm;
let proxy: TestProxy;

beforeAll(async () => {
  fake = await startFakeVllm({ model: 'toy', maxModelLen: 1 << 20, maxProduced: 10 });
  proxy = await startTestProxy({ backends: [fake.url], bridgeBudgetBytes: BUDGET });
});
afterAll(async () => {
  await proxy?.close();
  await fake?.close();
});

/** An agent's two turns on `baseURL`: a 4 KB system prompt, then the history resent with one more turn. */
async function twoTurns(baseURL: string, key: string, n: number): Promise<void> {
  const messages: { role: string; content: string }[] = [
    { role: 'system', content: `agent ${n}: ${'be brief. '.repeat(400)}` },
    { role: 'user', content: `task ${n}` },
  ];
  for (const next of [`more ${n}`, null]) {
    const res = await fetch(`${baseURL}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify({ model: 'toy', messages, max_tokens: 8 }),
    });
    expect(res.status).toBe(200);
    const answer = (await res.json()) as { choices: { message: { role: string; content: string } }[] };
    if (next === null) break;
    messages.push(answer.choices[0].message, { role: 'user', content: next });
  }
}

const held = () => ({ ...proxy.proxy.held(), chains: (proxy.store as SqlStore).chainsHeld });

describe('per-rollout caches', () => {
  it('forget a rollout that finishes, fails or is cancelled, and stay within the bridge budget meanwhile', async () => {
    const ends = [
      (id: string) => proxy.store.completeRollout(id),
      (id: string) => proxy.store.failRollout(id, 'gave up'),
      (id: string) => proxy.store.cancelRollout(id),
    ];
    for (let i = 0; i < 9; i++) {
      const r = await proxy.rollout();
      await twoTurns(r.baseURL, r.key, i);
      const calls = await proxy.calls(r.id);
      expect(calls.map((c) => c.token_source)).toEqual(['backend', 'bridge']);
      const during = held();
      expect(during.bridge.rollouts).toBe(1);
      expect(during.bridge.bytes).toBeGreaterThan(10_000);
      expect(during.bridge.bytes).toBeLessThanOrEqual(BUDGET);
      expect(during.scopes.rollouts).toBe(1);
      expect(during.affinities).toBe(1);
      expect(during.chains.chains).toBe(1);
      await ends[i % 3](r.id);
      expect(held()).toEqual({
        bridge: { bytes: 0, rollouts: 0 },
        scopes: { bytes: 0, rollouts: 0 },
        affinities: 0,
        chains: { bytes: 0, chains: 0 },
      });
    }
  });

  it('past its budget the bridge forgets the rollout remembered longest ago; that one falls back to text', async () => {
    const open = [];
    for (let i = 0; i < 12; i++) {
      const r = await proxy.rollout();
      await twoTurns(r.baseURL, r.key, 100 + i);
      open.push(r);
      expect(held().bridge.bytes).toBeLessThanOrEqual(BUDGET);
    }
    const { rollouts } = held().bridge;
    expect(rollouts).toBeGreaterThan(0);
    expect(rollouts).toBeLessThan(12);
    // The first rollout's next turn finds nothing to bridge from: rendered as text, and said so.
    const first = open[0];
    await twoTurns(first.baseURL, first.key, 100);
    const calls = await proxy.calls(first.id);
    expect(calls[2].bridge).toMatchObject({ fallback: 'no previous call' });
    for (const r of open) await proxy.store.completeRollout(r.id);
    expect(held().bridge).toEqual({ bytes: 0, rollouts: 0 });
  });

  it("forget a recording's rollout when the recording stops", async () => {
    const recording = await proxy.store.createRecording({
      name: 'rec',
      upstream: { kind: 'vllm', base_url: fake.url },
    });
    await twoTurns(`${proxy.url}/v1`, recording.key, 7);
    expect(held().bridge.rollouts).toBe(1);
    expect(held().chains.chains).toBe(1);
    await proxy.store.stopRecording(recording.id);
    expect(held().bridge).toEqual({ bytes: 0, rollouts: 0 });
    expect(held().chains).toEqual({ bytes: 0, chains: 0 });
  });
});
