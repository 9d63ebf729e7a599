// Rollout and recording keys are shown once (at creation, and a claim issues a fresh one); the store
// keeps only their SHA-256, so a copy of the database grants nothing, and auth compares hashes.
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { CreatedRecording, CreatedRollout } from '../../daemon/protocol/api';
import { RunConfig } from '../../daemon/protocol/config';
import type { Reward } from '../../daemon/protocol/entities';
import { freshStoreSpace, PG_SHOWN, postgresProblem } from '../../daemon/store/pg-testing';
import { startTestDaemon } from '../helpers/daemon';
import { proxyOnFakeVllm } from './proxy-setup';

const env = proxyOnFakeVllm();
const chat = { model: 'toy', messages: [{ role: 'user', content: 'hi' }] };
type ErrorAnswer = { error: { message: string; code: string | null } };

const problem = await postgresProblem();
if (problem && !process.env.CI)
  console.warn(
    `\n  SKIPPING the PostgreSQL half of the rollout-key tests: ${PG_SHOWN} is unreachable (${problem}).\n`,
  );
const stores: Array<'sqlite' | 'postgres'> = !problem || process.env.CI ? ['sqlite', 'postgres'] : ['sqlite'];

describe('rollout keys', () => {
  it('work for their rollout while no file of the SQLite store holds them', async () => {
    const daemon = await startTestDaemon();
    try {
      const rollout = (await daemon.api<CreatedRollout>('POST', '/api/rollouts', { input: 'x' })).body;
      const recording = (
        await daemon.api<CreatedRecording>('POST', '/api/recordings', {
          name: 'r',
          upstream: { kind: 'reference' },
        })
      ).body;
      expect((await daemon.api('GET', `/api/rollouts/${rollout.id}`, undefined, rollout.key)).status).toBe(
        200,
      );
      expect(
        (await daemon.api('GET', `/api/rollouts/${recording.rollout_id}`, undefined, recording.key)).status,
      ).toBe(200);
      const wrong = await daemon.api('GET', `/api/rollouts/${rollout.id}`, undefined, recording.key);
      expect(wrong.status).toBe(403);
      // The database file and its WAL: ids yes, keys no.
      let bytes = '';
      for (const f of await readdir(daemon.dataDir))
        if (f.startsWith('harness-rl.db'))
          bytes += (await readFile(join(daemon.dataDir, f))).toString('latin1');
      expect(bytes).toContain(rollout.id);
      expect(bytes).not.toContain(rollout.key);
      expect(bytes).not.toContain(recording.key);
    } finally {
      await daemon.close();
    }
  });

  it('a newly issued key replaces the old one on the proxy at once', async () => {
    const r = await env.proxy.rollout();
    const call = (key: string) =>
      fetch(`${r.baseURL}/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
        body: JSON.stringify(chat),
      }).then((res) => res.status);
    expect(await call(r.key)).toBe(200);
    const issued = await env.proxy.store.issueRolloutKey(r.id);
    expect(issued).toMatch(/^hrk_/);
    expect(await call(issued ?? '')).toBe(200);
    expect(await call(r.key)).toBe(403);
  });

  it("a finished, failed or cancelled rollout's key is a 409 naming its state, and no call is added", async () => {
    const store = env.proxy.store;
    for (const [end, state] of [
      [(id: string) => store.completeRollout(id), 'succeeded'],
      [(id: string) => store.failRollout(id, 'gave up'), 'failed'],
      [(id: string) => store.cancelRollout(id), 'cancelled'],
    ] as const) {
      const r = await env.proxy.rollout();
      expect(await call(r.baseURL, r.key)).toMatchObject({ status: 200 });
      await end(r.id);
      for (const key of [r.key, env.proxy.token]) {
        const refused = await call(r.baseURL, key);
        expect(refused.status).toBe(409);
        expect(refused.body.error.message).toBe(`rollout ${r.id} is ${state}: it takes no more calls`);
        expect(refused.body.error.code).toBe(`rollout_${state}`);
      }
      // Streamed and on the other wire APIs alike.
      const messages = await fetch(`${env.proxy.url}/r/${r.id}/v1/messages`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': r.key },
        body: JSON.stringify({ model: 'toy', max_tokens: 5, messages: chat.messages, stream: true }),
      });
      expect(messages.status).toBe(409);
      expect(((await messages.json()) as ErrorAnswer).error.message).toMatch(`is ${state}`);
      expect((await env.proxy.calls(r.id)).length).toBe(1);
    }
  });

  it("a retried run rollout's key works while it waits for its next attempt and is replaced by the claim", async () => {
    const store = env.proxy.store;
    const config = RunConfig.parse({ name: 'retry', model: { name: 'toy' }, tasks: { file: 'x.jsonl' } });
    const run = await store.createRun({ name: 'retry', config });
    const created = await store.createRollout({ kind: 'run', run_id: run.id, max_attempts: 2 });
    const baseURL = `${env.proxy.url}/r/${created.id}/v1`;
    const first = await store.claimRollout({ run_id: run.id, worker: 'w1' });
    expect(first?.rollout.id).toBe(created.id);
    expect((await call(baseURL, created.key)).status).toBe(200);
    await store.finishAttempt(first?.attempt.id ?? '', 'timed_out', 'too slow');
    expect((await store.getRollout(created.id))?.status).toBe('queued');
    // Queued for its second attempt: still active, its key still works.
    expect((await call(baseURL, created.key)).status).toBe(200);
    const second = await store.claimRollout({ run_id: run.id, worker: 'w2' });
    const key = await store.issueRolloutKey(created.id);
    expect((await call(baseURL, key ?? '')).status).toBe(200);
    expect((await call(baseURL, created.key)).status).toBe(403);
    await store.finishAttempt(second?.attempt.id ?? '', 'succeeded');
    expect((await call(baseURL, key ?? '')).status).toBe(409);
    expect((await env.proxy.calls(created.id)).map((c) => c.attempt_id)).toEqual([
      first?.attempt.id,
      null,
      second?.attempt.id,
    ]);
  });

  it("a stopped recording's key is a 409 that says so, unscoped and on its rollout's URL", async () => {
    const store = env.proxy.store;
    const recording = await store.createRecording({ name: 'rec', upstream: { kind: 'reference' } });
    const unscoped = `${env.proxy.url}/v1`;
    const scoped = `${env.proxy.url}/r/${recording.rollout_id}/v1`;
    expect((await call(unscoped, recording.key)).status).toBe(200);
    await store.stopRecording(recording.id);
    const a = await call(unscoped, recording.key);
    expect(a.status).toBe(409);
    expect(a.body.error.code).toBe('no_active_recording');
    const b = await call(scoped, env.proxy.token);
    expect(b.status).toBe(409);
    expect(b.body.error.message).toBe(
      `recording ${recording.id} is stopped: its rollout ${recording.rollout_id} takes no more calls (start a new recording)`,
    );
    expect((await env.proxy.calls(recording.rollout_id)).length).toBe(1);
  });
});

async function call(baseURL: string, key: string): Promise<{ status: number; body: ErrorAnswer }> {
  const res = await fetch(`${baseURL}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify(chat),
  });
  return { status: res.status, body: (await res.json()) as ErrorAnswer };
}

describe.each(stores)('the REST API on the %s store', (backend) => {
  it("a finished, failed or cancelled rollout's key can no longer post a reward, complete or fail it (409 naming its state)", async () => {
    const space = freshStoreSpace(backend, 'hrl-keys-', 't_keys_');
    const daemon = await startTestDaemon({ store: space.spec, dataDir: space.dataDir });
    try {
      for (const [end, state] of [
        ['complete', 'succeeded'],
        ['fail', 'failed'],
        ['cancel', 'cancelled'],
      ] as const) {
        const r = (await daemon.api<CreatedRollout>('POST', '/api/rollouts', { input: state })).body;
        expect((await daemon.api('POST', `/api/rollouts/${r.id}/reward`, { value: 0.5 }, r.key)).status).toBe(
          201,
        );
        // Cancelling takes the daemon token; completing and failing the harness does with its key.
        const ended = await daemon.api(
          'POST',
          `/api/rollouts/${r.id}/${end}`,
          end === 'fail' ? { error: 'x' } : {},
          end === 'cancel' ? undefined : r.key,
        );
        expect(ended.status).toBe(200);
        for (const [path, body] of [
          ['reward', { value: 1 }],
          ['complete', {}],
          ['fail', { error: 'late' }],
        ] as const) {
          const refused = await daemon.api<ErrorAnswer>('POST', `/api/rollouts/${r.id}/${path}`, body, r.key);
          expect(refused.status).toBe(409);
          expect(refused.body.error).toMatchObject({
            code: `rollout_${state}`,
            message: `rollout ${r.id} is ${state}: its key can no longer write to it (the daemon token can)`,
          });
        }
        // Reading stays open to the key; the daemon token may still label the rollout.
        expect((await daemon.api('GET', `/api/rollouts/${r.id}`, undefined, r.key)).status).toBe(200);
        expect((await daemon.api('POST', `/api/rollouts/${r.id}/reward`, { value: 0.25 })).status).toBe(201);
        const rewards: Reward[] = await daemon.ctx.store.listRewards(r.id);
        expect(rewards.map((w) => [w.source, w.value])).toEqual([
          ['harness', 0.5],
          ['api', 0.25],
        ]);
      }
      const recording = (
        await daemon.api<CreatedRecording>('POST', '/api/recordings', {
          name: 'r',
          upstream: { kind: 'reference' },
        })
      ).body;
      expect((await daemon.api('POST', `/api/recordings/${recording.id}/stop`, {})).status).toBe(200);
      const late = await daemon.api<ErrorAnswer>(
        'POST',
        `/api/rollouts/${recording.rollout_id}/reward`,
        { value: 1 },
        recording.key,
      );
      expect(late.status).toBe(409);
      expect(late.body.error.message).toBe(
        `recording ${recording.id} is stopped: its key can no longer write to its rollout ${recording.rollout_id} (the daemon token can)`,
      );
      expect(
        (await daemon.api('POST', `/api/rollouts/${recording.rollout_id}/reward`, { value: 1 })).status,
      ).toBe(201);
    } finally {
      await daemon.close();
      await space.drop();
    }
  });
});
