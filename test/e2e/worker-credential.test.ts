// A run's worker credential (what its Ray job gets instead of the daemon token): it claims the run's
// rollouts and heartbeats, streams the output of and finishes their attempts; every other route and
// every other run's attempt refuse it, and once the run stops it is revoked (401, the worker stops). The
// store keeps only its SHA-256.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Run } from '../../daemon/protocol/entities';
import { keyHash } from '../../daemon/store/ids';
import { runWorker } from '../../daemon/worker/worker';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon';

describe("a run's worker credential", () => {
  let daemon: TestDaemon;
  let dir: string;
  beforeAll(async () => {
    daemon = await startTestDaemon();
    dir = await mkdtemp(join(tmpdir(), 'harness-rl-credential-'));
    await writeFile(join(dir, 'tasks.jsonl'), '{"q":"1+1"}\n');
  });
  afterAll(async () => {
    await daemon?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  async function create(name: string): Promise<Run> {
    const config = {
      name,
      tasks: { file: 'tasks.jsonl' },
      harness: { workers: 'external', timeout_s: 60 },
      algorithm: { n: 2, max_response_tokens: 3 },
      schedule: { steps: 1, groups_per_step: 1 },
    };
    const res = await daemon.api<Run>('POST', '/api/runs', { config, base_dir: dir });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return res.body;
  }

  it('works on its own run’s worker routes only, and not after the run stopped', async () => {
    const [own, other] = [await create('own'), await create('other')];
    const key = (await daemon.ctx.store.issueWorkerKey(own.id))!;
    expect(key).toMatch(/^hrw_/);
    expect(await daemon.ctx.store.runOfWorkerKey(keyHash(key))).toBe(own.id);
    const as = (method: string, path: string, body?: unknown) => daemon.api(method, path, body, key);

    const claim = await as('POST', `/api/runs/${own.id}/claim`, { worker: 'w', wait_ms: 5000 });
    expect(claim.status, JSON.stringify(claim.body)).toBe(200);
    const attempt = claim.body.attempt.id as string;
    const rollout = claim.body.rollout.id as string;
    expect((await as('POST', `/api/attempts/${attempt}/heartbeat`, { rollout_id: rollout })).status).toBe(
      200,
    );
    const out = await as('POST', `/api/attempts/${attempt}/output`, { rollout_id: rollout, chunk: 'hi\n' });
    expect(out.status).toBe(200);

    // Another run's claims and attempts refuse it, naming the authorization.
    const foreign = await as('POST', `/api/runs/${other.id}/claim`, { wait_ms: 0 });
    expect([foreign.status, foreign.body.error.field]).toEqual([403, 'authorization']);
    const theirs = await daemon.api('POST', `/api/runs/${other.id}/claim`, { wait_ms: 5000 });
    const theirAttempt = theirs.body.attempt.id as string;
    for (const [path, body] of [
      [`/api/attempts/${theirAttempt}/heartbeat`, {}],
      [`/api/attempts/${theirAttempt}/output`, { chunk: 'x' }],
      [`/api/attempts/${theirAttempt}/finish`, { status: 'succeeded', reward: 1 }],
    ] as const) {
      const res = await as('POST', path, { ...body, rollout_id: theirs.body.rollout.id });
      expect([path, res.status, res.body.error.message]).toEqual([
        path,
        403,
        `this worker credential is for run ${own.id}, not run ${other.id}`,
      ]);
    }

    // Every other REST route refuses it (403), the daemon token's routes and the rollout key's alike.
    for (const [method, path] of [
      ['GET', '/api/runs'],
      ['GET', `/api/runs/${own.id}`],
      ['POST', `/api/runs/${own.id}/stop`],
      ['GET', `/api/rollouts/${rollout}`],
      ['POST', `/api/rollouts/${rollout}/reward`],
      ['GET', `/api/attempts/${attempt}/output`],
      ['GET', '/api/nodes'],
    ] as const) {
      const res = await as(method, path, method === 'POST' ? { value: 1 } : undefined);
      expect([method, path, res.status, res.body.error?.field]).toEqual([method, path, 403, 'authorization']);
    }

    const finish = await as('POST', `/api/attempts/${attempt}/finish`, {
      status: 'succeeded',
      reward: 0.5,
      rollout_id: rollout,
    });
    expect(finish.status).toBe(200);
    expect((await daemon.ctx.store.getRollout(rollout))?.reward).toBe(0.5);

    // The run stops: the credential is revoked, and refused as a wrong token (the worker stops).
    expect((await daemon.api('POST', `/api/runs/${own.id}/stop`, {})).status).toBe(200);
    await expect.poll(() => daemon.ctx.store.runOfWorkerKey(keyHash(key)), { timeout: 10_000 }).toBeNull();
    const after = await as('POST', `/api/runs/${own.id}/claim`, { wait_ms: 0 });
    expect([after.status, after.body.error.message]).toEqual([
      401,
      'invalid token: this worker credential is unknown or revoked (its run ended)',
    ]);
    await daemon.api('POST', `/api/runs/${other.id}/stop`, {});
  }, 60_000);

  it('runWorker (the SDK worker) trains a run with it, reading rollouts back with their own keys', async () => {
    const run = await create('sdk');
    const key = (await daemon.ctx.store.issueWorkerKey(run.id))!;
    const summary = await runWorker({
      daemonUrl: daemon.url,
      token: key,
      runId: run.id,
      concurrency: 2,
      // The harness posts its reward itself: the worker reads the rollout back to see it.
      rollout: async (ctx) => {
        const res = await daemon.api(
          'POST',
          `/api/rollouts/${ctx.rollout.id}/reward`,
          { value: 0.25 },
          ctx.key,
        );
        expect(res.status).toBe(201);
        return undefined;
      },
    });
    expect(summary).toMatchObject({ succeeded: 2, failed: 0 });
    const rollouts = (await daemon.ctx.store.listRollouts({ run_id: run.id })).items;
    expect(rollouts.map((r) => [r.status, r.reward])).toEqual([
      ['succeeded', 0.25],
      ['succeeded', 0.25],
    ]);
  }, 60_000);
});
