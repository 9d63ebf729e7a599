// The rollout routes of the REST API, driven over real HTTP against a real daemon and SQLite store.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CreatedRollout, RolloutDetail } from '../../daemon/protocol/api';
import type { Page, Rollout } from '../../daemon/protocol/entities';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon';

let daemon: TestDaemon;
beforeAll(async () => {
  daemon = await startTestDaemon();
});
afterAll(async () => {
  await daemon?.close();
});

async function createRollout(body: object = {}): Promise<CreatedRollout> {
  const res = await daemon.api<CreatedRollout>('POST', '/api/rollouts', body);
  expect(res.status).toBe(201);
  return res.body;
}

describe('auth', () => {
  it('health answers without a token and names the store and version', async () => {
    const res = await fetch(`${daemon.url}/api/health`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({
      ok: true,
      version: expect.stringMatching(/^\d+\.\d+\.\d+/),
      store: 'sqlite',
    });
  });

  it('every other route answers 401 without the token or with a wrong one', async () => {
    const missing = await fetch(`${daemon.url}/api/rollouts`);
    expect(missing.status).toBe(401);
    expect(((await missing.json()) as { error: unknown }).error).toMatchObject({
      code: 'unauthorized',
      field: 'authorization',
    });
    expect((await daemon.api('GET', '/api/runs', undefined, 'not-the-token')).status).toBe(401);
    expect((await daemon.api('POST', '/api/rollouts', {}, 'not-the-token')).status).toBe(401);
    expect((await daemon.api('GET', '/api/openapi.json', undefined, 'not-the-token')).status).toBe(401);
  });

  it('a rollout key reports on its own rollout and gets 403 everywhere else', async () => {
    const mine = await createRollout();
    const other = await createRollout();
    expect((await daemon.api('GET', `/api/rollouts/${mine.id}`, undefined, mine.key)).status).toBe(200);
    const reward = await daemon.api('POST', `/api/rollouts/${mine.id}/reward`, { value: 0.5 }, mine.key);
    expect(reward.status).toBe(201);
    expect(reward.body.source).toBe('harness');

    for (const [method, path, body] of [
      ['GET', `/api/rollouts/${other.id}`, undefined],
      ['POST', `/api/rollouts/${other.id}/reward`, { value: 1 }],
      ['POST', `/api/rollouts/${other.id}/complete`, undefined],
      ['POST', `/api/rollouts/${other.id}/fail`, { error: 'x' }],
      ['POST', `/api/rollouts/${mine.id}/cancel`, undefined],
      ['GET', '/api/rollouts', undefined],
      ['POST', '/api/rollouts', {}],
      ['GET', '/api/runs', undefined],
    ] as const) {
      const res = await daemon.api(method, path, body, mine.key);
      expect(res.status, `${method} ${path}`).toBe(403);
      expect(res.body.error.code).toBe('forbidden');
    }
    // The other rollout was not touched by the refused calls.
    const detail = await daemon.api<RolloutDetail>('GET', `/api/rollouts/${other.id}`);
    expect(detail.body.status).toBe('running');
    expect(detail.body.rewards).toEqual([]);
  });
});

describe('rollout life cycle', () => {
  it('a standalone rollout starts running, takes a reward, completes, and its detail shows it all', async () => {
    const created = await createRollout({ input: { question: 'what is 2+2?' } });
    expect(created.openai_base_url).toBe(`${daemon.url}/r/${created.id}/v1`);
    expect(created.anthropic_base_url).toBe(`${daemon.url}/r/${created.id}`);
    expect(created.key).toMatch(/^hrk_/);

    const running = await daemon.api<RolloutDetail>('GET', `/api/rollouts/${created.id}`);
    expect(running.body.status).toBe('running');
    expect(running.body.attempts).toHaveLength(1);
    expect(running.body.attempts[0]!.status).toBe('running');

    const reward = await daemon.api('POST', `/api/rollouts/${created.id}/reward`, {
      value: 1,
      source: 'verifier',
      detail: { exact: true },
    });
    expect(reward.status).toBe(201);
    const done = await daemon.api<Rollout>(
      'POST',
      `/api/rollouts/${created.id}/complete`,
      undefined,
      created.key,
    );
    expect(done.status).toBe(200);
    expect(done.body.status).toBe('succeeded');

    const detail = await daemon.api<RolloutDetail>('GET', `/api/rollouts/${created.id}`);
    expect(detail.body).toMatchObject({
      id: created.id,
      kind: 'standalone',
      status: 'succeeded',
      input: { question: 'what is 2+2?' },
      reward: 1,
    });
    expect(detail.body.attempts[0]!.status).toBe('succeeded');
    expect(detail.body.rewards).toMatchObject([{ value: 1, source: 'verifier', detail: { exact: true } }]);
    expect(detail.body.llm_calls).toEqual([]);
    expect(detail.body.prefix_breaks).toEqual([]);
  });

  it('a failed rollout keeps the error the harness gave', async () => {
    const created = await createRollout({ max_attempts: 1 });
    const failed = await daemon.api<Rollout>(
      'POST',
      `/api/rollouts/${created.id}/fail`,
      { error: 'tool crashed' },
      created.key,
    );
    expect(failed.status).toBe(200);
    expect(failed.body.status).toBe('failed');
    expect(failed.body.error).toBe('tool crashed');
  });

  it('a cancelled rollout cannot be completed afterwards (409) and stays cancelled', async () => {
    const created = await createRollout();
    expect((await daemon.api<Rollout>('POST', `/api/rollouts/${created.id}/cancel`)).body.status).toBe(
      'cancelled',
    );
    const again = await daemon.api('POST', `/api/rollouts/${created.id}/complete`, undefined, created.key);
    expect(again.status).toBe(409);
    // With the rollout's key the 409 names the state (as on the proxy); with the daemon token the store's.
    expect(again.body.error.code).toBe('rollout_cancelled');
    expect((await daemon.api('POST', `/api/rollouts/${created.id}/complete`)).body.error.code).toBe(
      'conflict',
    );
    expect((await daemon.api<Rollout>('GET', `/api/rollouts/${created.id}`)).body.status).toBe('cancelled');
  });

  it('a rollout created for a run waits queued for a worker; an unknown run is a 404 naming run_id', async () => {
    const missing = await daemon.api('POST', '/api/rollouts', { run_id: 'run_nope' });
    expect(missing.status).toBe(404);
    expect(missing.body.error).toMatchObject({ code: 'not_found', field: 'run_id' });
    expect(missing.body.error.message).toContain('run_nope');

    const run = await daemon.ctx.store.createRun({ name: 'manual', config: {} });
    const created = await createRollout({ run_id: run.id });
    const rollout = await daemon.api<Rollout>('GET', `/api/rollouts/${created.id}`);
    expect(rollout.body).toMatchObject({ kind: 'run', run_id: run.id, status: 'queued' });
  });
});

describe('the token bridge choice (tito)', () => {
  it('a standalone rollout and a recording keep tito: false; a run rollout or a pass-through recording cannot take it (400 naming tito)', async () => {
    const off = await createRollout({ tito: false });
    expect((await daemon.api<Rollout>('GET', `/api/rollouts/${off.id}`)).body).toMatchObject({ tito: false });
    const plain = await createRollout();
    expect((await daemon.api<Rollout>('GET', `/api/rollouts/${plain.id}`)).body).not.toHaveProperty('tito');

    const run = await daemon.ctx.store.createRun({ name: 'tito', config: {} });
    const forRun = await daemon.api('POST', '/api/rollouts', { run_id: run.id, tito: true });
    expect(forRun.status).toBe(400);
    expect(forRun.body.error).toMatchObject({ field: 'tito' });
    const provider = await daemon.api('POST', '/api/recordings', {
      upstream: { kind: 'anthropic' },
      tito: true,
    });
    expect(provider.status).toBe(400);
    expect(provider.body.error).toMatchObject({ field: 'tito' });
    expect(provider.body.error.message).toMatch(/text only/);

    const rec = await daemon.api<{ id: string; rollout_id: string }>('POST', '/api/recordings', {
      tito: false,
    });
    expect(rec.status).toBe(201);
    expect((await daemon.api<Rollout>('GET', `/api/rollouts/${rec.body.rollout_id}`)).body).toMatchObject({
      kind: 'recording',
      tito: false,
    });
    await daemon.api('POST', `/api/recordings/${rec.body.id}/stop`);
  });
});

describe('listing rollouts', () => {
  it('pages with cursors cover every rollout once, and filters narrow the list', async () => {
    const fresh = await startTestDaemon();
    try {
      const ids: string[] = [];
      for (let i = 0; i < 7; i++) {
        const r = (await fresh.api<CreatedRollout>('POST', '/api/rollouts', { input: i })).body;
        ids.push(r.id);
        if (i % 2 === 0) await fresh.api('POST', `/api/rollouts/${r.id}/reward`, { value: i });
        if (i < 3) await fresh.api('POST', `/api/rollouts/${r.id}/complete`);
      }
      const seen: string[] = [];
      let cursor: string | null = null;
      let pages = 0;
      do {
        const q: string = `/api/rollouts?limit=3${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
        const page = await fresh.api<Page<Rollout>>('GET', q);
        expect(page.status).toBe(200);
        expect(page.body.items.length).toBeLessThanOrEqual(3);
        seen.push(...page.body.items.map((r) => r.id));
        cursor = page.body.next_cursor;
        pages++;
      } while (cursor && pages < 10);
      expect(pages).toBe(3);
      expect([...seen].sort()).toEqual([...ids].sort());

      const list = async (query: string) =>
        (await fresh.api<Page<Rollout>>('GET', `/api/rollouts?${query}`)).body.items
          .map((r) => r.input)
          .sort();
      expect(await list('status=succeeded')).toEqual([0, 1, 2]);
      expect(await list('status=running')).toEqual([3, 4, 5, 6]);
      expect(await list('has_reward=true')).toEqual([0, 2, 4, 6]);
      expect(await list('has_reward=false')).toEqual([1, 3, 5]);
      expect(await list('min_reward=2&max_reward=4')).toEqual([2, 4]);
    } finally {
      await fresh.close();
    }
  });
});
