// Rollout and recording keys are shown once (at creation, and a claim issues a fresh one); the store
// keeps only their SHA-256, so a copy of the database grants nothing, and auth compares hashes.
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { CreatedRecording, CreatedRollout } from '../../daemon/protocol/api';
import { startTestDaemon } from '../helpers/daemon';
import { proxyOnFakeVllm } from './proxy-setup';

const env = proxyOnFakeVllm();
const chat = { model: 'toy', messages: [{ role: 'user', content: 'hi' }] };

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
});
