// The claim long-poll (POST /api/runs/:id/claim with wait_ms) served by the API table: a worker that
// hangs up while it waits is handed nothing, and the rollout goes to the next worker that asks.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunConfigInput } from '../../daemon/protocol/config';
import type { Run, RunWorkers } from '../../daemon/protocol/entities';
import type { Claimed } from '../../daemon/protocol/worker';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon';
import { waitFor } from '../helpers/wait';

let dir: string;
let daemon: TestDaemon;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'harness-rl-claim-'));
  await writeFile(join(dir, 'tasks.jsonl'), '{"prompt":"a"}\n{"prompt":"b"}\n');
  daemon = await startTestDaemon();
});
afterAll(async () => {
  await daemon?.close();
  await rm(dir, { recursive: true, force: true });
});

const config = {
  name: 'claims',
  tasks: { file: 'tasks.jsonl' },
  harness: { timeout_s: 60, max_attempts: 3 },
  algorithm: { n: 2, max_response_tokens: 8 },
  schedule: { steps: 1, groups_per_step: 1 },
} as RunConfigInput;

const claimOf = async (runId: string, worker: string, wait_ms: number) =>
  daemon.api<Claimed>('POST', `/api/runs/${runId}/claim`, { worker, wait_ms });

describe('the claim long-poll', () => {
  it('a worker that hangs up while it waits is handed no attempt; the next worker gets the rollout', async () => {
    const created = await daemon.api<Run>('POST', '/api/runs', { config, base_dir: dir });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const runId = created.body.id;
    // Both rollouts of the group are taken: a third claim has to wait.
    const first = await waitFor('a claim', async () => {
      const res = await claimOf(runId, 'busy', 1000);
      return res.status === 200 ? res.body : null;
    });
    expect((await claimOf(runId, 'busy', 5000)).status).toBe(200);

    const hangUp = new AbortController();
    const waiting = fetch(`${daemon.url}/api/runs/${runId}/claim`, {
      method: 'POST',
      headers: { authorization: `Bearer ${daemon.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ worker: 'gone', wait_ms: 30_000 }),
      signal: hangUp.signal,
    }).catch((err: Error) => err);
    await waitFor('the waiting worker to be seen', async () => {
      const seen = await daemon.api<RunWorkers>('GET', `/api/runs/${runId}/workers`);
      return seen.body.workers.some((w) => w.name === 'gone');
    });
    hangUp.abort();
    expect(await waiting).toBeInstanceOf(Error);
    // The daemon learns of the hang-up when the socket closes (a few ms); then the rollout is requeued.
    await new Promise((r) => setTimeout(r, 300));

    // The first rollout is queued again: the worker that hung up must not take it.
    const failed = await daemon.api('POST', `/api/attempts/${first.attempt.id}/finish`, {
      status: 'failed',
      error: 'try again',
      rollout_id: first.rollout.id,
    });
    expect(failed.status).toBe(200);
    expect(failed.body.rollout.status).toBe('queued');
    await new Promise((r) => setTimeout(r, 500));
    const attempts = await daemon.ctx.store.listAttempts(first.rollout.id);
    expect(attempts.map((a) => [a.worker, a.status])).toEqual([['busy', 'failed']]);

    const next = await claimOf(runId, 'next', 5000);
    expect(next.status).toBe(200);
    expect(next.body.rollout.id).toBe(first.rollout.id);
    expect(next.body.attempt).toMatchObject({ worker: 'next', index: 2 });
    expect((await daemon.api<Run>('POST', `/api/runs/${runId}/stop`, {})).body.status).toBe('stopped');
  });

  it('answers 204 with no body when nothing is queued within wait_ms', async () => {
    const created = await daemon.api<Run>('POST', '/api/runs', {
      config: { ...config, name: 'empty' },
      base_dir: dir,
    });
    const runId = created.body.id;
    for (const worker of ['a', 'b'])
      await waitFor('a claim', async () => (await claimOf(runId, worker, 1000)).status === 200);
    const started = Date.now();
    const res = await fetch(`${daemon.url}/api/runs/${runId}/claim`, {
      method: 'POST',
      headers: { authorization: `Bearer ${daemon.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ wait_ms: 300 }),
    });
    expect(res.status).toBe(204);
    expect(await res.text()).toBe('');
    expect(Date.now() - started).toBeGreaterThanOrEqual(250);
    await daemon.api('POST', `/api/runs/${runId}/stop`, {});
  });
});
