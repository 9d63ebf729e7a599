// GET /api/events: a real WebSocket client sees the store's events as they happen.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { EventTickets } from '../../daemon/api/events';
import { type CreatedRollout, EventsTicket } from '../../daemon/protocol/api';
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

  it('browsers open the socket with a single-use ticket from an authenticated POST, never the token', async () => {
    const issued = await daemon.api<EventsTicket>('POST', '/api/events/ticket');
    expect(issued.status).toBe(201);
    const { ticket, expires_at } = EventsTicket.parse(issued.body);
    expect(Date.parse(expires_at) - Date.now()).toBeLessThanOrEqual(30_000);
    const client = await listen(`?ticket=${encodeURIComponent(ticket)}`);
    const created = (await daemon.api<CreatedRollout>('POST', '/api/rollouts', {})).body;
    await client.waitFor((e) => e.type === 'rollout' && e.rollout.id === created.id);
    client.close();
    // Spent: the same ticket opens nothing more; a rollout key cannot get one; the token in the URL is refused.
    expect(await refusedStatus(`?ticket=${encodeURIComponent(ticket)}`)).toBe(401);
    expect(await refusedStatus('?ticket=hrt_made_up')).toBe(401);
    expect((await daemon.api('POST', '/api/events/ticket', undefined, created.key)).status).toBe(403);
    expect((await daemon.api('POST', '/api/events/ticket', undefined, 'wrong')).status).toBe(401);
    expect(await refusedStatus(`?token=${encodeURIComponent(daemon.token)}`)).toBe(400);
  });

  it('a ticket expires unused after 30 s', () => {
    const tickets = new EventTickets();
    const t0 = Date.now();
    const a = tickets.issue(t0);
    const b = tickets.issue(t0);
    expect(tickets.take(a.ticket, t0 + 29_999)).toBe(true);
    expect(tickets.take(a.ticket, t0 + 29_999)).toBe(false);
    expect(tickets.take(b.ticket, t0 + 30_000)).toBe(false);
  });

  it('?run_id= delivers only the events of that run', async () => {
    const run = await daemon.ctx.store.createRun({ name: 'watched', config: {} });
    const client = await listen(`?run_id=${run.id}`, { authorization: `Bearer ${daemon.token}` });
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
    expect(await refusedStatus('', { authorization: 'Bearer wrong' })).toBe(401);
    expect(await refusedStatus('', { authorization: `Bearer ${created.key}` })).toBe(403);
    const auth = { authorization: `Bearer ${daemon.token}` };
    expect(await refusedStatus('?run_id=run_nope', auth)).toBe(404);
    expect(await refusedStatus('?colour=red', auth)).toBe(400);
    // A plain GET is told to upgrade.
    expect((await daemon.api('GET', '/api/events')).status).toBe(426);
    expect((await daemon.api('GET', '/api/health')).status).toBe(200);
  });

  it('closing the daemon closes open event sockets', async () => {
    const other = await startTestDaemon();
    const ws = new WebSocket(`${other.url.replace('http', 'ws')}/api/events`, {
      headers: { authorization: `Bearer ${other.token}` },
    });
    await new Promise((resolve) => ws.once('open', resolve));
    const closed = new Promise((resolve) => ws.once('close', resolve));
    await other.close();
    await closed;
  });
});
