// Routing over two fake-vllm backends: rollout affinity, least outstanding requests, failover when a
// backend goes away, and the minimum model version.
import { afterEach, describe, expect, it } from 'vitest';
import { type FakeVllm, startFakeVllm } from '../fixtures/fake-vllm';
import { startTestProxy, type TestProxy } from './proxy-setup';

const chatBody = { model: 'toy', messages: [{ role: 'user' as const, content: 'route me' }] };
const open: { close(): Promise<void> }[] = [];
afterEach(async () => {
  for (const x of open.splice(0).reverse()) await x.close();
});

async function setup(): Promise<{ a: FakeVllm; b: FakeVllm; proxy: TestProxy }> {
  const a = await startFakeVllm();
  const b = await startFakeVllm();
  const proxy = await startTestProxy({ backends: [a.url, b.url] });
  open.push(a, b, proxy);
  return { a, b, proxy };
}

async function until(cond: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !cond(); i++) await new Promise((r) => setTimeout(r, 10));
  expect(cond()).toBe(true);
}

describe('routing', () => {
  it('a new rollout goes to the backend with fewer outstanding requests; a rollout sticks to its backend', async () => {
    const { a, b, proxy } = await setup();
    a.set({ delayMs: 300 });
    b.set({ delayMs: 300 });
    const r1 = await proxy.rollout();
    const r2 = await proxy.rollout();
    const first = r1.client.chat.completions.create(chatBody);
    await until(() => a.inflight() + b.inflight() === 1);
    const busy = a.inflight() === 1 ? a : b;
    const idle = busy === a ? b : a;
    const second = r2.client.chat.completions.create(chatBody);
    await until(() => idle.inflight() === 1);
    await Promise.all([first, second]);
    const [c1] = await proxy.calls(r1.id);
    const [c2] = await proxy.calls(r2.id);
    expect(c1.backend).toBe(busy.url);
    expect(c2.backend).toBe(idle.url);

    // Affinity: r1 goes back to its backend even while that one is the busier of the two.
    a.set({ delayMs: 0 });
    b.set({ delayMs: 0 });
    busy.set({ delayMs: 300 });
    const r3 = await proxy.rollout();
    const blocker = r3.client.chat.completions.create(chatBody);
    await until(() => a.inflight() + b.inflight() === 1);
    const r3Backend = a.inflight() === 1 ? a : b;
    const again = await proxy.rollout();
    await again.client.chat.completions.create(chatBody);
    await r1.client.chat.completions.create(chatBody);
    await blocker;
    const r1Calls = await proxy.calls(r1.id);
    expect(r1Calls[1].backend).toBe(c1.backend);
    const [cAgain] = await proxy.calls(again.id);
    expect(cAgain.backend).not.toBe(r3Backend.url);
  });

  it('a backend that goes away is skipped: its rollouts fail over to the other backend', async () => {
    const { a, b, proxy } = await setup();
    const r = await proxy.rollout();
    await r.client.chat.completions.create(chatBody);
    const [first] = await proxy.calls(r.id);
    const gone = first.backend === a.url ? a : b;
    const other = gone === a ? b : a;
    await gone.close();
    const res = await r.client.chat.completions.create(chatBody);
    expect(res.choices[0].message.content).toBe('echo: route me');
    const calls = await proxy.calls(r.id);
    expect(calls[1].status).toBe('ok');
    expect(calls[1].backend).toBe(other.url);
    const health = proxy.proxy.pool.list().find((x) => x.url === gone.url);
    expect(health?.healthy).toBe(false);
  });

  it('only backends serving at least the minimum model version get requests', async () => {
    const { a, b, proxy } = await setup();
    proxy.proxy.backends.setModelVersion(a.url, 1);
    proxy.proxy.backends.setModelVersion(b.url, 2);
    proxy.proxy.backends.setMinModelVersion(2);
    for (let i = 0; i < 4; i++) {
      const r = await proxy.rollout();
      await r.client.chat.completions.create(chatBody);
      const [c] = await proxy.calls(r.id);
      expect(c.backend).toBe(b.url);
      expect(c.model_version).toBe(2);
    }
    proxy.proxy.backends.setMinModelVersion(3);
    const r = await proxy.rollout();
    const err = await r.client.chat.completions.create(chatBody).catch((e) => e);
    expect(err.status).toBe(503);
    proxy.proxy.backends.setModelVersion(a.url, 3);
    await r.client.chat.completions.create(chatBody);
    const calls = await proxy.calls(r.id);
    expect(calls.map((c) => c.status)).toEqual(['error', 'ok']);
    expect(calls[1].backend).toBe(a.url);
    expect(calls[1].model_version).toBe(3);
  });

  it('backends added at run time serve requests; removed ones do not', async () => {
    const a = await startFakeVllm({ model: 'other' });
    const proxy = await startTestProxy({ backends: [] });
    open.push(a, proxy);
    proxy.proxy.backends.add(a.url, { name: 'node-1', modelVersion: 0 });
    const r = await proxy.rollout();
    // The backend serves "other": a harness asking for "toy" is mapped to the served model.
    const res = await r.client.chat.completions.create(chatBody);
    expect(res.choices[0].message.content).toBe('echo: route me');
    const [c] = await proxy.calls(r.id);
    expect(c.backend).toBe('node-1');
    expect(c.model).toBe('other');
    expect((c.request as { model: string }).model).toBe('toy');
    proxy.proxy.backends.remove(a.url);
    const err = await r.client.chat.completions.create(chatBody).catch((e) => e);
    expect(err.status).toBe(503);
  });

  it("a run's rollouts reach only its own backends; other calls the shared ones, or any when none is shared", async () => {
    const { a, b, proxy } = await setup();
    const r1 = await proxy.runRollout('one', {});
    const runOne = (await proxy.store.getRollout(r1.id))?.run_id as string;
    // a becomes run one's only: a backend is a URL for one run (or shared), so the shared a goes.
    proxy.proxy.backends.remove(a.url);
    proxy.proxy.backends.add(a.url, { name: 'engine:one', modelVersion: 1, runId: runOne });
    // b stays shared (from the daemon's --backend list) and idle; a is busy and still gets the run's call.
    a.set({ delayMs: 200 });
    const busy = r1.client.chat.completions.create(chatBody);
    await r1.client.chat.completions.create(chatBody);
    await busy;
    a.set({ delayMs: 0 });
    expect((await proxy.calls(r1.id)).map((c) => [c.backend, c.model_version])).toEqual([
      ['engine:one', 1],
      ['engine:one', 1],
    ]);

    const r2 = await proxy.runRollout('two', {}); // a run with no backend of its own: the shared one
    await r2.client.chat.completions.create(chatBody);
    expect((await proxy.calls(r2.id))[0].backend).toBe(b.url);
    const solo = await proxy.rollout(); // not a run's: the shared one, never a run's engine
    for (let i = 0; i < 3; i++) await solo.client.chat.completions.create(chatBody);
    expect((await proxy.calls(solo.id)).map((c) => c.backend)).toEqual([b.url, b.url, b.url]);

    // A run's minimum version binds its own backends only.
    proxy.proxy.backends.setMinModelVersion(2, runOne);
    const refused = await r1.client.chat.completions.create(chatBody).catch((e) => e);
    expect(refused.status).toBe(503);
    await solo.client.chat.completions.create(chatBody);
    expect((await proxy.calls(solo.id)).at(-1)?.status).toBe('ok');
    proxy.proxy.backends.setModelVersion(a.url, 2, runOne);
    await r1.client.chat.completions.create(chatBody);
    expect((await proxy.calls(r1.id)).at(-1)).toMatchObject({
      status: 'ok',
      backend: 'engine:one',
      model_version: 2,
    });

    // With no shared backend left, a call that is not a run's may use a run's backend…
    proxy.proxy.backends.remove(b.url);
    await solo.client.chat.completions.create(chatBody);
    expect((await proxy.calls(solo.id)).at(-1)?.backend).toBe('engine:one');
    // …but a run never samples from another run's weights.
    const other = await r2.client.chat.completions.create(chatBody).catch((e) => e);
    expect(other.status).toBe(503);
  });
});
