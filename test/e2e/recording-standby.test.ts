// A recording on the built-in engine (upstream `reference`, the extension's default) works with no
// run and no --backend: the daemon serves it from a standby reference engine with the newest
// weights, which steps aside while a run trains (the run's engine serves recordings then).
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { STANDBY_NAME } from '../../daemon/cluster/standby';
import type { LlmCall } from '../../daemon/protocol/entities';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon';
import { waitFor } from '../helpers/wait';

let daemon: TestDaemon;
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'harness-rl-standby-'));
  await writeFile(join(dir, 'tasks.jsonl'), `${JSON.stringify({ prompt: 'hi' })}\n`);
  daemon = await startTestDaemon();
});
afterAll(async () => {
  await daemon?.close();
  await rm(dir, { recursive: true, force: true });
});

/** The served model names over the daemon's own token (the proxy's backend pool). */
async function served(): Promise<string[]> {
  const res = await daemon.api('GET', '/v1/models');
  return res.status === 200 ? res.body.data.map((m: { id: string }) => m.id) : [];
}

describe('recordings on the reference engine', () => {
  it('are served between runs, by the run engine while a run trains, and the standby stops with the recording', async () => {
    expect(await served()).toEqual([]);
    const rec = await daemon.api('POST', '/api/recordings', { name: 'no run yet' });
    expect(rec.status).toBe(201);
    expect(rec.body.upstream).toEqual({ kind: 'reference' });
    const client = new OpenAI({ baseURL: rec.body.openai_base_url, apiKey: rec.body.key, maxRetries: 0 });
    const ask = () =>
      client.chat.completions.create({
        model: 'reference',
        messages: [{ role: 'user', content: '2+3=' }],
        max_tokens: 4,
      });

    const first = await ask();
    expect(first.choices[0].finish_reason).toMatch(/stop|length/);
    const calls = async (): Promise<LlmCall[]> =>
      (await daemon.api('GET', `/api/recordings/${rec.body.id}`)).body.calls;
    const [call] = await calls();
    expect(call).toMatchObject({ status: 'ok', backend: STANDBY_NAME, token_source: 'backend' });
    expect(call.response_ids?.length).toBeGreaterThan(0);
    const backends = async () => (await daemon.api('GET', '/api/backends')).body;
    expect(await backends()).toMatchObject([
      { name: STANDBY_NAME, run_id: null, healthy: true, outstanding: 0, total: 1, models: ['reference'] },
    ]);

    // A run takes over: its own engine serves, the standby steps aside.
    const run = await daemon.api('POST', '/api/runs', {
      config: {
        name: 'takes over',
        tasks: { file: 'tasks.jsonl' },
        algorithm: { n: 2 },
        schedule: { steps: 1, groups_per_step: 1 },
      },
      base_dir: dir,
    });
    expect(run.status, JSON.stringify(run.body)).toBe(201);
    await waitFor(
      'the run engine alone in the pool',
      async () => {
        const res = await daemon.api('GET', '/v1/models');
        return (
          res.status === 200 && res.body.data.length === 1 && (await ask()) && (await calls()).length >= 2
        );
      },
      30_000,
    );
    expect((await calls()).at(-1)).toMatchObject({ status: 'ok', backend: `reference:${run.body.id}` });
    expect(await backends()).toMatchObject([{ name: `reference:${run.body.id}`, run_id: run.body.id }]);

    // The run stops (no worker ever claimed its rollouts): the standby serves again.
    expect((await daemon.api('POST', `/api/runs/${run.body.id}/stop`, {})).status).toBeLessThan(300);
    await waitFor(
      'the standby back',
      async () => {
        await ask().catch(() => null);
        return (await calls()).at(-1)?.backend === STANDBY_NAME;
      },
      30_000,
    );
    expect((await calls()).at(-1)?.status).toBe('ok');

    await daemon.api('POST', `/api/recordings/${rec.body.id}/stop`, {});
    await waitFor('the standby gone', async () => (await served()).length === 0, 30_000);
    expect(await backends()).toEqual([]);
  });
});
