// GET /api/events: a real WebSocket client sees the store's events as they happen.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { CreatedRollout } from '../../daemon/protocol/api';
import type { DaemonEvent } from '../../daemon/protocol/events';
import { DaemonEvent as DaemonEventSchema } from '../../daemon/protocol/events';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon';

let daemon: TestDaemon;
beforeAll(async () => {
  daemon = await startTestDaemon();
});
afterAll(async () => {
  await daemon?.close();
});

/** Opens the event socket and collects its messages until `until` matches one. */
async function listen(query: string, headers: Record<string, string> = {}) {
  const ws = new WebSocket(`${daemon.url.replace('http', 'ws')}/api/events${query}`, { headers });
  const events: DaemonEvent[] = [];
  const waiters: { until: (e: DaemonEvent) => boolean; resolve: () => void }[] = [];
  ws.on('message', (data) => {
    const event = DaemonEventSchema.parse(JSON.parse(String(data)));
    events.push(event);
    for (const w of waiters.splice(0)) {
      if (w.until(event)) w.resolve();
      else waiters.push(w);
    }
  });
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  return {
    events,
    waitFor: (until: (e: DaemonEvent) => boolean) =>
      events.some(until)
        ? Promise.resolve()
        : new Promise<void>((resolve) => waiters.push({ until, resolve })),
    close: () => ws.close(),
  };
}

/** The HTTP status the server answered an upgrade with (it refused the socket). */
function refusedStatus(query: string, headers: Record<string, string> = {}): Promise<number> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`${daemon.url.replace('http', 'ws')}/api/events${query}`, { headers });
    ws.once('unexpected-response', (req, res) => {
      resolve(res.statusCode ?? 0);
      req.destroy();
    });
    ws.on('error', () => {});
    ws.once('open', () => reject(new Error('the socket was accepted')));
  });
}

describe('events', () => {
  it('a client with the token in the header sees a rollout created, rewarded and completed, in order', async () => {
    const client = await listen('', { authorization: `Bearer ${daemon.token}` });
    const created = (await daemon.api<CreatedRollout>('POST', '/api/rollouts', { input: 'e1' })).body;
    await daemon.api('POST', `/api/rollouts/${created.id}/reward`, { value: 0.25 }, created.key);
    await daemon.api('POST', `/api/rollouts/${created.id}/complete`, undefined, created.key);
    await client.waitFor(
      (e) => e.type === 'rollout' && e.rollout.id === created.id && e.rollout.status === 'succeeded',
    );
    client.close();

    const mine = client.events.filter(
      (e) =>
        (e.type === 'rollout' && e.rollout.id === created.id) ||
        (e.type === 'reward' && e.reward.rollout_id === created.id),
    );
    const reward = mine.findIndex((e) => e.type === 'reward');
    const succeeded = mine.findIndex((e) => e.type === 'rollout' && e.rollout.status === 'succeeded');
    expect(mine[0]).toMatchObject({ type: 'rollout', rollout: { id: created.id } });
    expect(mine[reward]).toMatchObject({ type: 'reward', reward: { value: 0.25 } });
    expect(reward).toBeGreaterThan(0);
    expect(succeeded).toBeGreaterThan(reward);
  });

  it('browsers may pass the token as ?token=', async () => {
    const client = await listen(`?token=${encodeURIComponent(daemon.token)}`);
    const created = (await daemon.api<CreatedRollout>('POST', '/api/rollouts', {})).body;
    await client.waitFor((e) => e.type === 'rollout' && e.rollout.id === created.id);
    client.close();
  });

  it('?run_id= delivers only the events of that run', async () => {
    const run = await daemon.ctx.store.createRun({ name: 'watched', config: {} });
    const client = await listen(`?run_id=${run.id}&token=${encodeURIComponent(daemon.token)}`);
    const outside = (await daemon.api<CreatedRollout>('POST', '/api/rollouts', { input: 'outside' })).body;
    await daemon.api('POST', `/api/rollouts/${outside.id}/reward`, { value: 1 });
    const inside = (
      await daemon.api<CreatedRollout>('POST', '/api/rollouts', { run_id: run.id, input: 'inside' })
    ).body;
    await daemon.api('POST', `/api/rollouts/${inside.id}/reward`, { value: 2 });
    await client.waitFor((e) => e.type === 'reward' && e.reward.rollout_id === inside.id);
    client.close();
    expect(client.events.length).toBeGreaterThanOrEqual(2);
    for (const e of client.events) {
      const rolloutId =
        e.type === 'rollout' ? e.rollout.id : e.type === 'reward' ? e.reward.rollout_id : null;
      expect(rolloutId).not.toBe(outside.id);
    }
  });

  it('refuses sockets without a valid token (401), with a rollout key (403) or for an unknown run (404)', async () => {
    const created = (await daemon.api<CreatedRollout>('POST', '/api/rollouts', {})).body;
    expect(await refusedStatus('')).toBe(401);
    expect(await refusedStatus('?token=wrong')).toBe(401);
    expect(await refusedStatus('', { authorization: `Bearer ${created.key}` })).toBe(403);
    expect(await refusedStatus(`?run_id=run_nope&token=${encodeURIComponent(daemon.token)}`)).toBe(404);
    expect(await refusedStatus(`?colour=red&token=${encodeURIComponent(daemon.token)}`)).toBe(400);
    // A plain GET is told to upgrade.
    expect((await daemon.api('GET', '/api/events')).status).toBe(426);
    expect((await daemon.api('GET', '/api/health')).status).toBe(200);
  });

  it('closing the daemon closes open event sockets', async () => {
    const other = await startTestDaemon();
    const ws = new WebSocket(
      `${other.url.replace('http', 'ws')}/api/events?token=${encodeURIComponent(other.token)}`,
    );
    await new Promise((resolve) => ws.once('open', resolve));
    const closed = new Promise((resolve) => ws.once('close', resolve));
    await other.close();
    await closed;
  });
});
