// The extension's daemon client against a real daemon (SQLite in a temp folder, port 0).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Daemon, startDaemon } from '../../daemon/daemon';
import type { DaemonEvent } from '../../daemon/protocol/events';
import { ApiError, DaemonClient } from './client';
import { PagedList } from './paging';

let daemon: Daemon;
let dir: string;
let client: DaemonClient;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'harness-rl-ext-client-'));
  daemon = await startDaemon({ dataDir: dir, port: 0, token: 'ext-test-token' });
  client = new DaemonClient(daemon.url, 'ext-test-token');
});

afterAll(async () => {
  await daemon?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('DaemonClient against a real daemon', () => {
  it('reads health and validates responses with the protocol schemas', async () => {
    const h = await client.health();
    expect(h.ok).toBe(true);
    expect((await client.listRuns()).items).toEqual([]);
  });

  it('a wrong token is a clear 401 error, an unreachable daemon says where it looked', async () => {
    const bad = new DaemonClient(daemon.url, 'nope');
    await expect(bad.listRuns()).rejects.toMatchObject({ status: 401 });
    const gone = new DaemonClient('http://127.0.0.1:9', 'x', 2_000);
    const err = await gone.health().catch((e) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect(err.code).toBe('unreachable');
    expect(err.message).toContain('http://127.0.0.1:9');
  });

  it('the sidebar pages rollouts with cursors: each page is one request and nothing repeats', async () => {
    for (let i = 0; i < 7; i++) {
      const res = await fetch(`${daemon.url}/api/rollouts`, {
        method: 'POST',
        headers: { authorization: 'Bearer ext-test-token', 'content-type': 'application/json' },
        body: JSON.stringify({ input: { i } }),
      });
      expect(res.status).toBeLessThan(300);
    }
    let requests = 0;
    const list = new PagedList((cursor) => {
      requests++;
      return client.listRollouts({ cursor, limit: 3 });
    });
    expect((await list.ensure()).length).toBe(3);
    expect(list.hasMore).toBe(true);
    await list.loadMore();
    await list.loadMore();
    expect(list.items.length).toBe(7);
    expect(new Set(list.items.map((r) => r.id)).size).toBe(7);
    expect(list.hasMore).toBe(false);
    expect(requests).toBe(3);
    const detail = await client.getRollout(list.items[0].id);
    expect(detail.llm_calls).toEqual([]);
    // the base URL a harness uses (the claim's openai_base_url), not the REST resource
    expect(client.rolloutUrl(detail.id)).toBe(`${daemon.url}/r/${detail.id}/v1`);
  });

  it("reads a group with its rollouts (the trajectory view's siblings) through the protocol's schema", async () => {
    const store = daemon.ctx.store;
    const run = await store.createRun({ name: 'group-read', config: {} });
    const group = await store.createGroup({ run_id: run.id, task_id: null, step: 2, size: 2 });
    const rollouts = [
      await store.createRollout({ kind: 'run', run_id: run.id, group_id: group.id }),
      await store.createRollout({ kind: 'run', run_id: run.id, group_id: group.id }),
    ];
    const read = await client.getGroup(group.id);
    expect([read.id, read.step, read.size]).toEqual([group.id, 2, 2]);
    expect(read.rollouts.map((r) => r.id).sort()).toEqual(rollouts.map((r) => r.id).sort());
  });

  it('a reward posted from the extension arrives as a live event', async () => {
    const events: DaemonEvent[] = [];
    let connected = false;
    const stream = client.events(
      (e) => events.push(e),
      (c) => {
        connected = c;
      },
    );
    try {
      await expect.poll(() => connected, { timeout: 10_000 }).toBe(true);
      const { items } = await client.listRollouts({ limit: 1 });
      await client.postReward(items[0].id, { value: 0.5, source: 'human' });
      await expect
        .poll(() => events.find((e) => e.type === 'reward' && e.reward.rollout_id === items[0].id), {
          timeout: 10_000,
        })
        .toBeTruthy();
    } finally {
      stream.close();
    }
  });

  it('creates, lists and stops a recording', async () => {
    const rec = await client.createRecording({ name: 'ext test', upstream: { kind: 'reference' } });
    expect(rec.key).toBeTruthy();
    expect(rec.openai_base_url).toMatch(/\/v1$/);
    expect((await client.listRecordings()).map((r) => r.id)).toContain(rec.id);
    await client.stopRecording(rec.id);
    expect((await client.listRecordings()).find((r) => r.id === rec.id)?.status).toBe('stopped');
  });
});
