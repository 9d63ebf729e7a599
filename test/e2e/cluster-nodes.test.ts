import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { restoreSecrets } from '../../daemon/config/held-secrets';
import { startReferenceEngine } from '../../daemon/engine';
import { type NodeAgent, type Peer, type Role, startNodeAgent } from '../../daemon/node/agent';
import { InferenceRole } from '../../daemon/node/inference';
import { TrainerRole } from '../../daemon/node/trainer';
import type { RunConfigInput } from '../../daemon/protocol/config';
import type { NodeInfo, Run } from '../../daemon/protocol/entities';
import { decodeFrame, encodeFrame, type Frame } from '../../daemon/protocol/frames';
import type { NodeHealth } from '../../daemon/protocol/node';
import { NODE_PROTOCOL_VERSION, type NodeMessage } from '../../daemon/protocol/node';
import { type RolloutContext, runWorker } from '../../daemon/worker/worker';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon';
import { selfSignedCert } from '../helpers/tls';
import { waitFor } from '../helpers/wait';

let dir: string;
const token = `node_${randomBytes(8).toString('hex')}`;
const quiet = () => {};

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'harness-rl-nodes-'));
  const tasks = Array.from({ length: 4 }, (_, i) => JSON.stringify({ prompt: `Say ${i}` })).join('\n');
  await writeFile(join(dir, 'tasks.jsonl'), `${tasks}\n`);
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function inferenceNode(name: string, port = 0): Promise<NodeAgent> {
  const role = new InferenceRole({ dataDir: join(dir, name), engine: 'reference', log: quiet });
  return startNodeAgent({ host: '127.0.0.1', port, token, role, log: quiet, healthIntervalMs: 200 });
}

async function trainerNode(
  name: string,
  port = 0,
  wrap?: (role: TrainerRole) => TrainerRole,
): Promise<NodeAgent> {
  const base = new TrainerRole({ dataDir: join(dir, name), engine: 'reference', log: quiet });
  return startNodeAgent({
    host: '127.0.0.1',
    port,
    token,
    role: wrap ? wrap(base) : base,
    log: quiet,
    healthIntervalMs: 200,
  });
}

/**
 * The role, with `outgoing` in front of every frame it sends to the daemon (it sends it on with
 * `send`, or drops it), and `incoming` shown every frame it gets.
 */
function intercept<R extends Role>(
  role: R,
  outgoing: (header: NodeMessage, payload: Uint8Array | undefined, send: Peer['send']) => Promise<void>,
  incoming?: (frame: Frame) => void,
): R {
  const handle = role.handle.bind(role);
  role.handle = (frame, peer) => {
    incoming?.(frame);
    handle(frame, {
      get closed() {
        return peer.closed;
      },
      send: (header, payload) => outgoing(header, payload, (h, p) => peer.send(h, p)),
    });
  };
  return role;
}

function config(
  inference: string[],
  trainer: string,
  steps = 2,
  extra: Partial<RunConfigInput> = {},
): RunConfigInput {
  return {
    name: `nodes-${randomBytes(3).toString('hex')}`,
    inference: { endpoints: inference, token },
    trainer: { endpoint: trainer, token },
    tasks: { file: 'tasks.jsonl' },
    harness: { concurrency: 4, timeout_s: 60, max_attempts: 3 },
    algorithm: { n: 2, learning_rate: 0.01, max_response_tokens: 16 },
    schedule: { steps, groups_per_step: 2 },
    ...extra,
  } as RunConfigInput;
}

async function chatHarness(ctx: RolloutContext): Promise<{ reward: number }> {
  const client = new OpenAI({ baseURL: ctx.openai_base_url, apiKey: ctx.key, maxRetries: 0 });
  const stream = await client.chat.completions.create({
    model: ctx.model,
    messages: [{ role: 'user', content: String((ctx.input as { prompt: string }).prompt) }],
    max_tokens: 6,
    stream: true,
  });
  let text = '';
  for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
  return { reward: text.length % 2 };
}

async function createRun(daemon: TestDaemon, cfg: RunConfigInput): Promise<Run> {
  const res = await daemon.api<Run>('POST', '/api/runs', { config: cfg, base_dir: dir });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body;
}

const work = (daemon: TestDaemon, runId: string) =>
  runWorker({ daemonUrl: daemon.url, token: daemon.token, runId, concurrency: 4, rollout: chatHarness });

describe('a run on node agents', () => {
  let daemon: TestDaemon;
  beforeAll(async () => {
    daemon = await startTestDaemon();
  });
  afterAll(async () => {
    await daemon?.close();
  });

  it('samples through the inference node, trains on the trainer node and loads each new version', async () => {
    const inference = await inferenceNode('inf-a');
    const trainer = await trainerNode('train-a');
    try {
      const run = await createRun(daemon, config([inference.url], trainer.url, 2));
      const summary = await work(daemon, run.id);
      expect(summary.succeeded).toBe(8);
      const after = (await daemon.api<Run>('GET', `/api/runs/${run.id}`)).body;
      expect(after).toMatchObject({ status: 'finished', step: 2, error: null, model_version: 2 });

      // Every call went through the node and carries the version that produced it: step s → version s.
      const rollouts = (await daemon.ctx.store.listRollouts({ run_id: run.id, limit: 100 })).items;
      const versionsByStep = new Map<number, Set<number | null>>();
      for (const r of rollouts) {
        const group = await daemon.ctx.store.getGroup(r.group_id as string);
        for (const call of await daemon.ctx.store.listLlmCalls(r.id)) {
          expect(call.backend).toBe(`node ${inference.url}`);
          expect(call.status).toBe('ok');
          expect(call.response_ids?.length).toBeGreaterThan(0);
          expect(call.response_logprobs?.length).toBe(call.response_ids?.length);
          const set = versionsByStep.get(group!.step) ?? new Set();
          set.add(call.model_version);
          versionsByStep.set(group!.step, set);
        }
      }
      expect([...versionsByStep.get(0)!]).toEqual([0]);
      expect([...versionsByStep.get(1)!]).toEqual([1]);

      // The nodes report health: the inference node serves the run's version 2, the trainer trained it.
      const nodes = await waitFor('node health with version 2', async () => {
        const list = (await daemon.api<NodeInfo[]>('GET', '/api/nodes')).body;
        const inf = list.find((n) => n.url === inference.url);
        const health = (inf?.detail as { health?: NodeHealth } | null)?.health;
        return health?.versions[run.id] === 2 ? list : null;
      });
      const t = nodes.find((n) => n.url === trainer.url);
      expect(t).toMatchObject({ kind: 'trainer' });
      expect((t?.detail as { health?: NodeHealth } | undefined)?.health?.versions[run.id]).toBe(2);
    } finally {
      await inference.close();
      await trainer.close();
    }
  });

  it('async mode on nodes: the next step samples while the trainer node trains, staleness within max_staleness', async () => {
    const inference = await inferenceNode('inf-async');
    const trainer = await trainerNode('train-async');
    try {
      const cfg = config([inference.url], trainer.url, 3, {});
      const run = await createRun(daemon, {
        ...cfg,
        schedule: { steps: 3, groups_per_step: 2, mode: 'async', max_staleness: 1 },
      });
      const summary = await work(daemon, run.id);
      expect(summary.succeeded).toBe(12);
      expect((await daemon.api<Run>('GET', `/api/runs/${run.id}`)).body).toMatchObject({
        status: 'finished',
        model_version: 3,
      });
      const metrics = (
        await daemon.api<{ step: number; metrics: Record<string, number> }[]>(
          'GET',
          `/api/runs/${run.id}/metrics`,
        )
      ).body;
      expect(metrics.map((m) => m.metrics.staleness).every((s) => s >= 0 && s <= 1)).toBe(true);
    } finally {
      await inference.close();
      await trainer.close();
    }
  });

  for (const whileLoading of ['wait', 'reject'] as const) {
    it(`calls that find the node loading new weights ${whileLoading === 'wait' ? 'wait for them' : 'get 429 with Retry-After'} (while_loading: ${whileLoading})`, async () => {
      // Every weight load takes 2.5 s; harnesses call 1 s after they start, so calls arrive mid-load.
      const role = new InferenceRole({
        dataDir: join(dir, `inf-load-${whileLoading}`),
        engine: 'reference',
        log: quiet,
      });
      const handle = role.handle.bind(role);
      role.handle = (frame, peer: Peer) => {
        if (frame.header.t === 'weights_load') setTimeout(() => handle(frame, peer), 2500);
        else handle(frame, peer);
      };
      const node = await startNodeAgent({ host: '127.0.0.1', port: 0, token, role, log: quiet });
      const trainer = await trainerNode(`train-load-${whileLoading}`);
      try {
        const cfg = config([node.url], trainer.url, 2);
        const run = await createRun(daemon, {
          ...cfg,
          inference: { ...cfg.inference, while_loading: whileLoading },
          schedule: { steps: 2, groups_per_step: 2, mode: 'async', max_staleness: 1 },
        });
        const summary = await runWorker({
          daemonUrl: daemon.url,
          token: daemon.token,
          runId: run.id,
          concurrency: 8,
          rollout: async (ctx) => {
            await new Promise((r) => setTimeout(r, 1000));
            const client = new OpenAI({ baseURL: ctx.openai_base_url, apiKey: ctx.key, maxRetries: 5 });
            const reply = await client.chat.completions.create({
              model: ctx.model,
              messages: [{ role: 'user', content: 'Say 1' }],
              max_tokens: 4,
            });
            return { reward: (reply.choices[0]?.message.content ?? '').length % 2 };
          },
        });
        expect(summary.succeeded).toBe(8);
        expect((await daemon.api<Run>('GET', `/api/runs/${run.id}`)).body).toMatchObject({
          status: 'finished',
        });
        const calls = [];
        for (const r of (await daemon.ctx.store.listRollouts({ run_id: run.id, limit: 100 })).items)
          calls.push(...(await daemon.ctx.store.listLlmCalls(r.id)));
        const refused = calls.filter((c) => c.http_status === 429);
        if (whileLoading === 'wait') {
          expect(refused).toEqual([]);
          expect(calls.every((c) => c.status === 'ok')).toBe(true);
          // Some call waited out a load.
          expect(Math.max(...calls.map((c) => c.queue_ms ?? 0))).toBeGreaterThan(500);
        } else {
          expect(refused.length).toBeGreaterThan(0);
          expect(refused[0].error).toMatch(/loading new weights/);
        }
      } finally {
        await node.close();
        await trainer.close();
      }
    });
  }

  it('node tokens stay out of what the API shows of a run (REST and live events)', async () => {
    const node = await inferenceNode('inf-secret');
    try {
      const ticket = (await daemon.api<{ ticket: string }>('POST', '/api/events/ticket', {})).body.ticket;
      const events: string[] = [];
      const ws = new WebSocket(`${daemon.url.replace('http', 'ws')}/api/events?ticket=${ticket}`);
      ws.on('message', (d: Buffer) => events.push(d.toString('utf8')));
      await new Promise((r) => ws.on('open', r));
      const run = await createRun(daemon, config([node.url], 'reference', 1));
      const shown = [
        JSON.stringify(run),
        JSON.stringify((await daemon.api('GET', `/api/runs/${run.id}`)).body),
        JSON.stringify((await daemon.api('GET', '/api/runs')).body),
      ];
      await work(daemon, run.id);
      ws.close();
      expect(events.some((e) => e.includes(run.id))).toBe(true);
      for (const text of [...shown, ...events]) expect(text).not.toContain(token);
      expect(shown[1]).toContain('(hidden)');
      // The store does not keep it; the daemon holds it (<data>/secrets.json) to reconnect after a restart.
      const stored = (await daemon.ctx.store.getRun(run.id))?.config;
      expect(JSON.stringify(stored)).not.toContain(token);
      expect(JSON.stringify(restoreSecrets(daemon.dataDir, `run:${run.id}`, stored))).toContain(token);
    } finally {
      await node.close();
    }
  });

  it("fails a LoRA run at start whose rank is above the node's vLLM --max-lora-rank, naming both (not at its first weight load, a step later)", async () => {
    // The node's vLLM never comes up here: the check reads the command's flags from the node's welcome.
    const role = new InferenceRole({
      dataDir: join(dir, 'inf-lora'),
      vllmUrl: 'http://127.0.0.1:9',
      vllmCmd: "sh -c 'exec sleep 600' vllm serve Qwen/Qwen3-1.7B --enable-lora --max-lora-rank 8",
      log: quiet,
    });
    const node = await startNodeAgent({ host: '127.0.0.1', port: 0, token, role, log: quiet });
    try {
      const run = await createRun(daemon, {
        ...config([node.url], 'reference', 1),
        model: { name: 'policy', lora: { rank: 16, alpha: 32 } },
      });
      const failed = await waitFor('the run to fail', async () => {
        const r = (await daemon.api<Run>('GET', `/api/runs/${run.id}`)).body;
        return r.status === 'failed' ? r : null;
      });
      expect(failed.error).toMatch(
        /inference node .*: model\.lora\.rank 16 is above its vLLM's --max-lora-rank 8/,
      );
    } finally {
      await node.close();
    }
  });

  it('refuses a node with the wrong token and fails the run with that reason', async () => {
    const role = new InferenceRole({ dataDir: join(dir, 'inf-wrong'), engine: 'reference', log: quiet });
    const node = await startNodeAgent({
      host: '127.0.0.1',
      port: 0,
      token: 'another-token',
      role,
      log: quiet,
    });
    try {
      const bad = await createRun(daemon, { ...config([node.url], 'reference', 1), name: 'wrong-token' });
      const failed = await waitFor('the run to fail', async () => {
        const r = (await daemon.api<Run>('GET', `/api/runs/${bad.id}`)).body;
        return r.status === 'failed' ? r : null;
      });
      expect(failed.error).toMatch(/refused the token \(401\)/);
    } finally {
      await node.close();
    }
  });

  it('a trainer node that dies after applying a step gets the batch again and does not apply it twice', async () => {
    const inference = await inferenceNode('inf-b');
    let port = 0;
    let dropped = false;
    let replacement: Promise<NodeAgent> | null = null;
    let trainer: NodeAgent | null = null;
    // The first `trained` reply is lost: the node dies right after applying step 0; a new node
    // process starts on the same port with the same data folder.
    const dropFirstReply = (role: TrainerRole) =>
      intercept(role, async (header, payload, send) => {
        if (header.t === 'trained' && !dropped) {
          dropped = true;
          replacement = (async () => {
            await trainer?.close();
            return trainerNode('train-b', port);
          })();
          return;
        }
        await send(header, payload);
      });
    trainer = await trainerNode('train-b', 0, dropFirstReply);
    port = trainer.port;
    try {
      const run = await createRun(daemon, config([inference.url], trainer.url, 2));
      const summary = await work(daemon, run.id);
      expect(summary.succeeded).toBe(8);
      const after = (await daemon.api<Run>('GET', `/api/runs/${run.id}`)).body;
      expect(dropped).toBe(true);
      // Two steps, two versions: the step sent twice was applied once.
      expect(after).toMatchObject({ status: 'finished', step: 2, model_version: 2 });
      const versions = (await daemon.ctx.store.listModelVersions(run.id)).map((v) => v.version).sort();
      expect(versions).toEqual([1, 2]);
    } finally {
      await inference.close();
      const next = replacement as Promise<NodeAgent> | null;
      if (next) await (await next).close();
    }
  });

  it('an inference node that dies mid-stream: the call is recorded as failed, the rollout retries on the other node', async () => {
    // Node a goes down right after streaming the first bytes of its first answer.
    let a: NodeAgent | null = null;
    let died: Promise<void> | null = null;
    const generations = new Set<string>();
    const role = intercept(
      new InferenceRole({ dataDir: join(dir, 'inf-c'), engine: 'reference', log: quiet }),
      async (header, payload, send) => {
        if (died) return;
        await send(header, payload);
        if (header.t === 'http_data' && generations.has(header.id)) died = a?.close() ?? null;
      },
      ({ header }) => {
        if (header.t === 'http' && header.path.endsWith('/chat/completions')) generations.add(header.id);
      },
    );
    a = await startNodeAgent({ host: '127.0.0.1', port: 0, token, role, log: quiet, healthIntervalMs: 200 });
    const aUrl = a.url;
    const b = await inferenceNode('inf-d');
    const trainer = await trainerNode('train-c');
    try {
      const run = await createRun(daemon, config([aUrl, b.url], trainer.url, 2));
      const summary = await work(daemon, run.id);
      expect(summary.succeeded).toBe(8);
      expect(died).not.toBeNull();
      const after = (await daemon.api<Run>('GET', `/api/runs/${run.id}`)).body;
      expect(after).toMatchObject({ status: 'finished', step: 2 });
      const rollouts = (await daemon.ctx.store.listRollouts({ run_id: run.id, limit: 100 })).items;
      const calls = [];
      for (const r of rollouts) calls.push(...(await daemon.ctx.store.listLlmCalls(r.id)));
      const failed = calls.filter((c) => c.status !== 'ok');
      expect(failed.length).toBeGreaterThanOrEqual(1);
      expect(failed[0]).toMatchObject({ backend: `node ${aUrl}`, stream: true });
      expect(failed[0].error).toBeTruthy();
      // The rollout of the failed call was tried again and succeeded; later calls all went to node b.
      const retried = rollouts.find((r) => r.id === failed[0].rollout_id);
      expect(retried).toMatchObject({ status: 'succeeded' });
      expect(
        (await daemon.ctx.store.listAttempts(failed[0].rollout_id as string)).length,
      ).toBeGreaterThanOrEqual(2);
      expect(
        calls
          .filter((c) => c.status === 'ok' && c.created_at > failed[0].created_at)
          .every((c) => c.backend === `node ${b.url}`),
      ).toBe(true);
    } finally {
      await died;
      await b.close();
      await trainer.close();
    }
  });

  it('a node refuses a daemon of another protocol version, naming both versions', async () => {
    const node = await inferenceNode('inf-version');
    try {
      const ws = new WebSocket(node.url, { headers: { authorization: `Bearer ${token}` } });
      const reply = await new Promise<string>((resolve, reject) => {
        ws.on('open', () =>
          ws.send(encodeFrame({ t: 'hello', protocol_version: NODE_PROTOCOL_VERSION + 1 })),
        );
        ws.on('message', (data: Buffer) => {
          const { header } = decodeFrame(data);
          resolve(header.t === 'refused' ? header.message : header.t);
        });
        ws.on('error', reject);
      });
      expect(reply).toBe(
        `protocol version mismatch: the daemon speaks ${NODE_PROTOCOL_VERSION + 1}, this node ${NODE_PROTOCOL_VERSION}`,
      );
      ws.close();
    } finally {
      await node.close();
    }
  });

  it('connects to a node over wss:// with a self-signed certificate named by tls_ca', async () => {
    const { cert, key } = selfSignedCert(dir);
    const tls = { cert: await readFile(cert, 'utf8'), key: await readFile(key, 'utf8') };
    const role = new InferenceRole({ dataDir: join(dir, 'inf-tls'), engine: 'reference', log: quiet });
    const node = await startNodeAgent({ host: '127.0.0.1', port: 0, token, tls, role, log: quiet });
    try {
      expect(node.url).toMatch(/^wss:\/\//);
      const cfg = config([node.url], 'reference', 1);
      const run = await createRun(daemon, { ...cfg, inference: { ...cfg.inference, tls_ca: cert } });
      const summary = await work(daemon, run.id);
      expect(summary.succeeded).toBe(4);
      expect((await daemon.api<Run>('GET', `/api/runs/${run.id}`)).body).toMatchObject({
        status: 'finished',
      });
    } finally {
      await node.close();
    }
  });
  it('reloads full weights into a vLLM-shaped server given as a URL (pause, reload_weights with weights_path, resume: vLLM 0.34 refuses a reload while generating) after each step', async () => {
    const server = await startReferenceEngine({
      dataDir: join(dir, 'http-backend'),
      resume: false,
      seed: 99,
    });
    try {
      const run = await createRun(daemon, config([server.url], 'reference', 2));
      const summary = await work(daemon, run.id);
      expect(summary.succeeded).toBe(8);
      expect((await daemon.api<Run>('GET', `/api/runs/${run.id}`)).body).toMatchObject({
        status: 'finished',
        model_version: 2,
      });
      // The server now serves the trainer's version 2 (it started from other weights: seed 99).
      const health = (await (await fetch(`${server.url.replace(/\/v1$/, '')}/health`)).json()) as {
        model_version: number;
      };
      expect(health.model_version).toBe(2);
      for (const r of (await daemon.ctx.store.listRollouts({ run_id: run.id, limit: 100 })).items) {
        const group = await daemon.ctx.store.getGroup(r.group_id as string);
        for (const call of await daemon.ctx.store.listLlmCalls(r.id)) {
          expect(call.backend).toBe(server.url);
          expect(call.model_version).toBe(group?.step);
        }
      }
    } finally {
      await server.close();
    }
  });
  it('a node whose backend is not up takes no calls (its health says so); the other node serves them', async () => {
    // Node "starting" reports ready: false, as one whose vLLM is still starting or restarting would.
    const role = new InferenceRole({ dataDir: join(dir, 'inf-starting'), engine: 'reference', log: quiet });
    const health = role.health.bind(role);
    role.health = () => ({ ...health(), ready: false });
    const starting = await startNodeAgent({ host: '127.0.0.1', port: 0, token, role, log: quiet });
    const up = await inferenceNode('inf-up');
    const trainer = await trainerNode('train-starting');
    try {
      const run = await createRun(daemon, config([starting.url, up.url], trainer.url, 2));
      expect((await work(daemon, run.id)).succeeded).toBe(8);
      const backends = new Set<string | null>();
      for (const r of (await daemon.ctx.store.listRollouts({ run_id: run.id, limit: 100 })).items)
        for (const c of await daemon.ctx.store.listLlmCalls(r.id)) backends.add(c.backend);
      expect([...backends]).toEqual([`node ${up.url}`]);
    } finally {
      await starting.close();
      await up.close();
      await trainer.close();
    }
  });

  it('a slow node does not stall the others: calls go to the fast one while the slow one is busy', async () => {
    // Node "slow" answers every generation 1.5 s late and loads weights 8 s late.
    const role = new InferenceRole({ dataDir: join(dir, 'inf-slow'), engine: 'reference', log: quiet });
    const handle = role.handle.bind(role);
    const late = (t: string) => (t === 'weights_load' ? 8000 : t === 'http' ? 1500 : 0);
    role.handle = (frame, peer: Peer) => {
      const delay =
        frame.header.t === 'http' && !frame.header.path.endsWith('/chat/completions')
          ? 0
          : late(frame.header.t);
      setTimeout(() => handle(frame, peer), delay);
    };
    const slow = await startNodeAgent({ host: '127.0.0.1', port: 0, token, role, log: quiet });
    const fast = await inferenceNode('inf-fast');
    const trainer = await trainerNode('train-slow');
    try {
      const started = Date.now();
      const run = await createRun(daemon, config([slow.url, fast.url], trainer.url, 3));
      const summary = await work(daemon, run.id);
      const seconds = (Date.now() - started) / 1000;
      expect(summary.succeeded).toBe(12);
      expect((await daemon.api<Run>('GET', `/api/runs/${run.id}`)).body).toMatchObject({
        status: 'finished',
        step: 3,
      });
      const byBackend = new Map<string, number>();
      for (const r of (await daemon.ctx.store.listRollouts({ run_id: run.id, limit: 100 })).items)
        for (const c of await daemon.ctx.store.listLlmCalls(r.id))
          byBackend.set(c.backend ?? '', (byBackend.get(c.backend ?? '') ?? 0) + 1);
      expect(byBackend.get(`node ${fast.url}`) ?? 0).toBeGreaterThan(byBackend.get(`node ${slow.url}`) ?? 0);
      // Four weight loads (start and three steps) of 8 s each on the slow node: 32 s if the run waited.
      expect(seconds).toBeLessThan(16);
    } finally {
      await slow.close();
      await fast.close();
      await trainer.close();
    }
  });
});

describe('a daemon killed during a step', () => {
  it('resumes the run on restart, records the step its trainer node had applied and goes on', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'harness-rl-restart-'));
    const daemonToken = `test_${randomBytes(8).toString('hex')}`;
    let first: TestDaemon | null = await startTestDaemon({ dataDir, token: daemonToken });
    let killed: Promise<void> | null = null;
    const inference = await inferenceNode('inf-restart');
    // The trainer applies step 0; before its reply arrives, the daemon goes down.
    const trainer = await trainerNode('train-restart', 0, (role) =>
      intercept(role, async (header, payload, send) => {
        if (header.t === 'trained' && !killed) {
          killed = first?.close() ?? null;
          return;
        }
        await send(header, payload);
      }),
    );
    let second: TestDaemon | null = null;
    try {
      const run = await createRun(first, config([inference.url], trainer.url, 2));
      const stopFirst = new AbortController();
      const firstWorker = runWorker({
        daemonUrl: first.url,
        token: daemonToken,
        runId: run.id,
        concurrency: 4,
        rollout: chatHarness,
        signal: stopFirst.signal,
      }).catch(() => null);
      await waitFor('the first daemon to go down', async () => killed !== null);
      await killed;
      stopFirst.abort();
      await firstWorker;
      first = null;
      second = await startTestDaemon({ dataDir, token: daemonToken });
      const summary = await work(second, run.id);
      expect(summary.succeeded).toBeGreaterThanOrEqual(4);
      const after = (await second.api<Run>('GET', `/api/runs/${run.id}`)).body;
      expect(after).toMatchObject({ status: 'finished', step: 2, model_version: 2 });
      const versions = (await second.ctx.store.listModelVersions(run.id)).map((v) => v.version).sort();
      expect(versions).toEqual([1, 2]);
      const metrics = (
        await second.api<{ step: number; metrics: Record<string, number> }[]>(
          'GET',
          `/api/runs/${run.id}/metrics`,
        )
      ).body;
      expect(metrics.find((m) => m.step === 0)?.metrics.recovered).toBe(1);
    } finally {
      await second?.close();
      await inference.close();
      await trainer.close();
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});
