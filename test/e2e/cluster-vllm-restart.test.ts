// A vLLM restart under a running run (issue 39): weights loaded at run time live in vLLM's memory only,
// so a restarted server serves the base model. The node agent forgets what it had loaded, reports not
// ready and holds calls; the daemon sends the run's current weights again before any call is served, so
// no call is recorded as version N on other weights. The backend here is the reference engine's server
// started by the node (--vllm-cmd), which reports the version it really serves (x-model-version).
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startNodeAgent } from '../../daemon/node/agent';
import { InferenceRole } from '../../daemon/node/inference';
import { TrainerRole } from '../../daemon/node/trainer';
import type { RunConfigInput } from '../../daemon/protocol/config';
import type { Run } from '../../daemon/protocol/entities';
import { type RolloutContext, runWorker } from '../../daemon/worker/worker';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon';
import { freePort } from '../helpers/process';

const ROOT = resolve(__dirname, '../..');
const token = `node_${randomBytes(8).toString('hex')}`;
const quiet = () => {};
let dir: string;
let daemon: TestDaemon;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'harness-rl-restart-'));
  const tasks = Array.from({ length: 6 }, (_, i) => JSON.stringify({ prompt: `Say ${i}` })).join('\n');
  await writeFile(join(dir, 'tasks.jsonl'), `${tasks}\n`);
  daemon = await startTestDaemon();
});
afterAll(async () => {
  await daemon?.close();
  await rm(dir, { recursive: true, force: true });
});

async function chatHarness(ctx: RolloutContext): Promise<{ reward: number }> {
  const client = new OpenAI({ baseURL: ctx.openai_base_url, apiKey: ctx.key, maxRetries: 0 });
  const r = await client.chat.completions.create({
    model: ctx.model,
    messages: [{ role: 'user', content: String((ctx.input as { prompt: string }).prompt) }],
    max_tokens: 6,
  });
  return { reward: (r.choices[0]?.message.content ?? '').length % 2 };
}

describe('a vLLM that restarts under a run', () => {
  it('gets the run weights again before it serves: every call after the kill runs on the version it is recorded with', async () => {
    const port = await freePort();
    const pidFile = join(dir, 'vllm.pid');
    const role = new InferenceRole({
      dataDir: join(dir, 'inf'),
      vllmUrl: `http://127.0.0.1:${port}`,
      vllmCmd: `${process.execPath} --import tsx ${join(ROOT, 'test/fixtures/reference-server.ts')} ${port} ${join(dir, 'engine')} ${pidFile}`,
      log: quiet,
    });
    // What the backend itself says it serves, per chat call (its x-model-version header), and the kill
    // of its process once the first trained version is loaded.
    const served: number[] = [];
    let killedAt = -1;
    const handle = role.handle.bind(role);
    const chats = new Set<string>();
    role.handle = (frame, peer) => {
      const h = frame.header;
      if (h.t === 'http' && h.path.endsWith('/chat/completions')) chats.add(h.id);
      handle(frame, {
        get closed() {
          return peer.closed;
        },
        send: async (header, payload) => {
          if (header.t === 'http_head' && chats.has(header.id) && header.status === 200)
            served.push(Number(header.headers['x-model-version']));
          await peer.send(header, payload);
          if (header.t === 'weights_loaded' && header.version >= 1 && killedAt < 0) {
            killedAt = served.length;
            process.kill(Number(await readFile(pidFile, 'utf8')), 'SIGKILL');
          }
        },
      });
    };
    const inference = await startNodeAgent({
      host: '127.0.0.1',
      port: 0,
      token,
      role,
      log: quiet,
      healthIntervalMs: 200,
    });
    const trainer = await startNodeAgent({
      host: '127.0.0.1',
      port: 0,
      token,
      log: quiet,
      healthIntervalMs: 200,
      role: new TrainerRole({ dataDir: join(dir, 'train'), engine: 'reference', log: quiet }),
    });
    try {
      const config = {
        name: `restart-${randomBytes(3).toString('hex')}`,
        inference: { endpoints: [inference.url], token },
        trainer: { endpoint: trainer.url, token },
        tasks: { file: 'tasks.jsonl' },
        harness: { concurrency: 4, timeout_s: 60, max_attempts: 3 },
        algorithm: { n: 2, learning_rate: 0.01, max_response_tokens: 16 },
        schedule: { steps: 3, groups_per_step: 2 },
      } as RunConfigInput;
      const created = await daemon.api<Run>('POST', '/api/runs', { config, base_dir: dir });
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      const runId = created.body.id;
      const summary = await runWorker({
        daemonUrl: daemon.url,
        token: daemon.token,
        runId,
        concurrency: 4,
        rollout: chatHarness,
      });
      expect(summary.succeeded).toBe(12);
      expect((await daemon.api<Run>('GET', `/api/runs/${runId}`)).body).toMatchObject({ status: 'finished' });
      expect(killedAt).toBeGreaterThanOrEqual(0);
      expect(role.health().restarts).toBe(1);

      // The versions the calls are recorded with are the versions the backend served them with.
      const recorded: number[] = [];
      for (const r of (await daemon.ctx.store.listRollouts({ run_id: runId, limit: 100 })).items)
        for (const c of await daemon.ctx.store.listLlmCalls(r.id))
          if (c.status === 'ok') recorded.push(c.model_version ?? 0);
      const after = served.slice(killedAt);
      expect(after.length, 'calls after the restart').toBeGreaterThan(0);
      expect(after, 'no call after the restart was served by the base model').not.toContain(0);
      expect([...served].sort()).toEqual([...recorded].sort());
    } finally {
      await inference.close();
      await trainer.close();
    }
  }, 120_000);
});
