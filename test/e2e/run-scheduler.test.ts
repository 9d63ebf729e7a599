// Runs end to end: a run created over REST trains on the reference engine with SDK workers that call
// the proxy through the official openai client; retries, timeouts, stop and resume after a restart.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunConfigInput } from '../../daemon/protocol/config';
import type { Attempt, Rollout, Run } from '../../daemon/protocol/entities';
import { type RolloutContext, runWorker } from '../../daemon/worker/worker';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon';
import { waitFor } from '../helpers/wait';

let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'harness-rl-run-'));
  const tasks = Array.from({ length: 6 }, (_, i) => JSON.stringify({ prompt: `Say ${i}` })).join('\n');
  await writeFile(join(dir, 'tasks.jsonl'), `${tasks}\n`);
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

function runConfig(patch: {
  name?: string;
  harness?: Record<string, unknown>;
  algorithm?: Record<string, unknown>;
  schedule?: Record<string, unknown>;
}): RunConfigInput {
  return {
    name: patch.name ?? 'e2e',
    tasks: { file: 'tasks.jsonl', validation_fraction: 0.34 },
    harness: { concurrency: 4, timeout_s: 60, max_attempts: 2, ...patch.harness },
    algorithm: { n: 2, learning_rate: 0.01, max_response_tokens: 64, ...patch.algorithm },
    schedule: { steps: 2, groups_per_step: 2, ...patch.schedule },
  } as RunConfigInput;
}

/** A harness: one chat call through the proxy with the official client; reward from the reply. */
async function chatHarness(ctx: RolloutContext): Promise<{ reward: number }> {
  const client = new OpenAI({ baseURL: ctx.openai_base_url, apiKey: ctx.key, maxRetries: 0 });
  const reply = await client.chat.completions.create({
    model: ctx.model,
    messages: [{ role: 'user', content: String((ctx.input as { prompt: string }).prompt) }],
    max_tokens: 6,
    temperature: 1,
  });
  const text = reply.choices[0]?.message.content ?? '';
  return { reward: text.length % 2 };
}

/** A worker running chatHarness, 4 rollouts at a time, on the run until it ends. */
function chatWorker(daemon: { url: string; token: string }, runId: string) {
  return runWorker({
    daemonUrl: daemon.url,
    token: daemon.token,
    runId,
    concurrency: 4,
    rollout: chatHarness,
  });
}

async function createRun(daemon: TestDaemon, config: RunConfigInput): Promise<Run> {
  const res = await daemon.api<Run>('POST', '/api/runs', { config, base_dir: dir });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body;
}

async function runRollouts(daemon: TestDaemon, runId: string): Promise<Rollout[]> {
  return (await daemon.ctx.store.listRollouts({ run_id: runId, limit: 1000 })).items;
}

describe('a run on the reference engine', () => {
  let daemon: TestDaemon;
  beforeAll(async () => {
    daemon = await startTestDaemon();
  });
  afterAll(async () => {
    await daemon?.close();
  });

  it('trains its steps with an SDK worker and stores metrics, model versions and rollout stats', async () => {
    const run = await createRun(daemon, runConfig({ schedule: { steps: 2, validate_every: 1 } }));
    expect(run.status).toBe('running');
    const summary = await chatWorker(daemon, run.id);
    expect(summary.succeeded).toBeGreaterThanOrEqual(8);

    const after = (await daemon.api<Run>('GET', `/api/runs/${run.id}`)).body;
    expect(after).toMatchObject({ status: 'finished', step: 2, error: null });
    expect(after.model_version).toBeGreaterThan(0);
    const metrics = (await daemon.api('GET', `/api/runs/${run.id}/metrics`)).body as {
      step: number;
      metrics: Record<string, number | null>;
    }[];
    expect(metrics.map((m) => m.step)).toEqual([0, 1]);
    for (const m of metrics) {
      expect(m.metrics.mean_reward).toBeTypeOf('number');
      expect(m.metrics.rollouts).toBe(4);
      expect(m.metrics.prefix_breaks).toBe(0);
      expect(m.metrics.tokens_per_s).toBeGreaterThan(0);
      expect(m.metrics.val_reward).toBeTypeOf('number');
      expect(m.metrics).toHaveProperty('zero_variance_groups');
    }
    const versions = await daemon.ctx.store.listModelVersions(run.id);
    expect(versions.length).toBeGreaterThanOrEqual(1);
    expect(Math.max(...versions.map((v) => v.version))).toBe(after.model_version);

    const rollouts = await runRollouts(daemon, run.id);
    // 2 steps × 2 groups × 2 rollouts, plus one validation rollout per validation task per step.
    expect(rollouts.length).toBe(8 + 2 * 2);
    expect(rollouts.every((r) => r.status === 'succeeded' && r.reward !== null)).toBe(true);
    const train = rollouts.filter((r) => r.stats !== null);
    expect(train.length).toBe(8);
    expect(train.every((r) => r.stats!.samples === 1 && r.stats!.mask_tokens > 0)).toBe(true);
    const calls = await daemon.ctx.store.listLlmCalls(train[0].id);
    expect(calls[0].prompt_ids?.length).toBeGreaterThan(0);
    expect(calls[0].model_version).not.toBeNull();
    // The run is over: workers are told to go.
    const claim = await daemon.api('POST', `/api/runs/${run.id}/claim`, {});
    expect(claim.status).toBe(410);
  });

  it.each([
    {
      loss: 'the sequence (GSPO) ratio',
      algorithm: { policy_ratio: 'sequence', tis_cap: null, loss_agg: 'seq-mean-token-mean' },
    },
    { loss: 'the CISPO loss', algorithm: { policy_loss: 'cispo', clip_low: 10, clip_high: 0.2 } },
  ])('trains with $loss: a finite loss and a clip fraction each step', async ({ algorithm }) => {
    const run = await createRun(daemon, runConfig({ name: 'loss', algorithm }));
    expect((run.config as { algorithm: object }).algorithm).toMatchObject(algorithm);
    await chatWorker(daemon, run.id);
    const after = (await daemon.api<Run>('GET', `/api/runs/${run.id}`)).body;
    expect(after).toMatchObject({ status: 'finished', step: 2, error: null });
    expect(after.model_version).toBeGreaterThan(0);
    const metrics = (await daemon.api('GET', `/api/runs/${run.id}/metrics`)).body as {
      metrics: Record<string, number | null>;
    }[];
    expect(metrics).toHaveLength(2);
    for (const { metrics: m } of metrics) {
      expect(Number.isFinite(m.loss)).toBe(true);
      expect(m.clip_fraction).toBeGreaterThanOrEqual(0);
      expect(m.clip_fraction).toBeLessThanOrEqual(1);
    }
  });

  it('two runs train at once, each sampling only from its own engine', async () => {
    const one = await createRun(daemon, runConfig({ name: 'one', schedule: { steps: 2 } }));
    const two = await createRun(daemon, runConfig({ name: 'two', schedule: { steps: 2 } }));
    expect([one.status, two.status]).toEqual(['running', 'running']);
    const [a, b] = await Promise.all([chatWorker(daemon, one.id), chatWorker(daemon, two.id)]);
    expect(a.succeeded).toBeGreaterThanOrEqual(8);
    expect(b.succeeded).toBeGreaterThanOrEqual(8);
    for (const run of [one, two]) {
      const after = (await daemon.api<Run>('GET', `/api/runs/${run.id}`)).body;
      expect(after).toMatchObject({ status: 'finished', step: 2, error: null });
      const backends = new Set<string | null>();
      const versions = new Set<number | null>();
      for (const r of await runRollouts(daemon, run.id))
        for (const c of await daemon.ctx.store.listLlmCalls(r.id)) {
          backends.add(c.backend);
          versions.add(c.model_version);
        }
      expect([...backends]).toEqual([`reference:${run.id}`]);
      expect(Math.max(...[...versions].map(Number))).toBeLessThanOrEqual(after.model_version);
    }
  });

  it('in async mode samples the next step while training and keeps staleness within max_staleness', async () => {
    const run = await createRun(
      daemon,
      runConfig({ name: 'async', schedule: { mode: 'async', max_staleness: 1, steps: 3 } }),
    );
    await chatWorker(daemon, run.id);
    const after = (await daemon.api<Run>('GET', `/api/runs/${run.id}`)).body;
    expect(after).toMatchObject({ status: 'finished', step: 3 });
    const metrics = (await daemon.api('GET', `/api/runs/${run.id}/metrics`)).body as {
      metrics: Record<string, number>;
    }[];
    expect(metrics).toHaveLength(3);
    for (const m of metrics) expect(m.metrics.staleness).toBeLessThanOrEqual(1);
    // Step k+1's groups exist before step k's model version is recorded: they were created while it trained.
    const groups = (await daemon.ctx.store.listGroups(run.id)).items;
    const versions = await daemon.ctx.store.listModelVersions(run.id);
    const firstVersion = versions.find((v) => v.version === 1)!;
    const step1 = groups.filter((g) => g.step === 1);
    expect(step1.length).toBe(2);
    expect(step1.every((g) => g.created_at <= firstVersion.created_at)).toBe(true);
  });

  it('retries a rollout whose harness fails and fails it once its attempts are used up', async () => {
    const run = await createRun(
      daemon,
      runConfig({ name: 'retry', harness: { max_attempts: 2 }, schedule: { steps: 1, groups_per_step: 2 } }),
    );
    // The rollouts of one group always fail; those of the other fail once, then succeed.
    let failing: string | null = null;
    const summary = await runWorker({
      daemonUrl: daemon.url,
      token: daemon.token,
      runId: run.id,
      concurrency: 2,
      rollout: async (ctx) => {
        failing ??= ctx.rollout.group_id;
        if (ctx.rollout.group_id === failing || ctx.attempt.index === 1) {
          throw new Error(`harness crashed on attempt ${ctx.attempt.index}`);
        }
        return chatHarness(ctx);
      },
    });
    expect(summary).toMatchObject({ succeeded: 2, failed: 6 });
    const rollouts = await runRollouts(daemon, run.id);
    const succeeded = rollouts.filter((r) => r.status === 'succeeded');
    const failed = rollouts.filter((r) => r.status === 'failed');
    expect(succeeded).toHaveLength(2);
    expect(failed).toHaveLength(2);
    for (const r of rollouts) {
      const attempts = await daemon.ctx.store.listAttempts(r.id);
      expect(attempts).toHaveLength(2);
      expect(attempts[0]).toMatchObject({ status: 'failed', error: 'harness crashed on attempt 1' });
    }
    expect(failed[0].error).toContain('harness crashed on attempt 2');
    const after = (await daemon.api<Run>('GET', `/api/runs/${run.id}`)).body;
    expect(after.status).toBe('finished');
    const [metrics] = (await daemon.api('GET', `/api/runs/${run.id}/metrics`)).body;
    expect(metrics.metrics.failed_rollouts).toBe(2);
  });

  it('times out an attempt that runs past harness.timeout_s and retries the rollout', async () => {
    const run = await createRun(
      daemon,
      runConfig({
        name: 'timeout',
        harness: { timeout_s: 2, max_attempts: 2 },
        schedule: { steps: 1, groups_per_step: 1 },
      }),
    );
    // A worker that claims and then goes silent: the daemon itself must time the attempt out.
    const claim = await daemon.api('POST', `/api/runs/${run.id}/claim`, { worker: 'silent' });
    expect(claim.status).toBe(200);
    expect(claim.body.openai_base_url).toBe(`${daemon.url}/r/${claim.body.rollout.id}/v1`);
    const attempt = await waitFor('the timed-out attempt', async () => {
      const attempts = await daemon.ctx.store.listAttempts(claim.body.rollout.id);
      return attempts.find((a: Attempt) => a.status === 'timed_out');
    });
    expect(attempt.error).toContain('2s');
    // Its heartbeat now says stop; a late finish is refused.
    const beat = await daemon.api('POST', `/api/attempts/${attempt.id}/heartbeat`, {});
    expect(beat.body).toEqual({ status: 'timed_out', cancel: true });
    const late = await daemon.api('POST', `/api/attempts/${attempt.id}/finish`, {
      status: 'succeeded',
      reward: 1,
    });
    expect(late.status).toBe(409);
    // A worker whose harness hangs past the timeout ends the attempt as timed_out itself and moves on.
    let hung = 0;
    await runWorker({
      daemonUrl: daemon.url,
      token: daemon.token,
      runId: run.id,
      concurrency: 2,
      rollout: async (ctx) => {
        if (ctx.attempt.index === 1 && hung++ === 0) await new Promise((r) => setTimeout(r, 10_000));
        return chatHarness(ctx);
      },
    });
    const rollouts = await runRollouts(daemon, run.id);
    expect(rollouts.map((r) => r.status)).toEqual(['succeeded', 'succeeded']);
    const statuses = (await Promise.all(rollouts.map((r) => daemon.ctx.store.listAttempts(r.id))))
      .flat()
      .map((a) => a.status)
      .sort();
    expect(statuses).toEqual(['succeeded', 'succeeded', 'timed_out', 'timed_out']);
  });

  it('stopping a run cancels its queued and running rollouts and its groups, and ends its workers', async () => {
    const run = await createRun(daemon, runConfig({ name: 'stop', schedule: { steps: 5 } }));
    // A second run beside it is not touched by the stop.
    const second = await createRun(daemon, runConfig({ name: 'second' }));
    expect(second.status).toBe('running');
    const claim = await waitFor('a claim', async () => {
      const res = await daemon.api('POST', `/api/runs/${run.id}/claim`, { wait_ms: 1000 });
      return res.status === 200 ? res.body : null;
    });
    const stopped = await daemon.api<Run>('POST', `/api/runs/${run.id}/stop`, {});
    expect(stopped.status).toBe(200);
    expect(stopped.body.status).toBe('stopped');
    const rollouts = await runRollouts(daemon, run.id);
    expect(rollouts.length).toBe(4);
    expect(rollouts.every((r) => r.status === 'cancelled')).toBe(true);
    // The stopped step's groups say so too (the sidebar showed them "running" forever).
    const groups = (await daemon.ctx.store.listGroups(run.id)).items;
    expect(groups.map((g) => g.status)).toEqual(['cancelled', 'cancelled']);
    const beat = await daemon.api('POST', `/api/attempts/${claim.attempt.id}/heartbeat`, {});
    expect(beat.body).toEqual({ status: 'cancelled', cancel: true });
    expect((await daemon.api('POST', `/api/runs/${run.id}/claim`, {})).status).toBe(410);
    expect((await daemon.api<Run>('GET', `/api/runs/${second.id}`)).body.status).toBe('running');
    expect((await daemon.api('POST', `/api/runs/${second.id}/claim`, { wait_ms: 5000 })).status).toBe(200);
    expect((await daemon.api<Run>('POST', `/api/runs/${second.id}/stop`, {})).body.status).toBe('stopped');
  });

  it('refuses worker calls without the daemon token and names bad fields', async () => {
    const res = await fetch(`${daemon.url}/api/runs/nope/claim`, { method: 'POST' });
    expect(res.status).toBe(401);
    const bad = await daemon.api('POST', '/api/runs/nope/claim', { wait_ms: -1 });
    expect(bad.status).toBe(400);
    expect(bad.body.error.field).toBe('wait_ms');
    expect((await daemon.api('POST', '/api/runs/nope/claim', {})).status).toBe(404);
    const finish = await daemon.api('POST', '/api/attempts/att_x/finish', { status: 'done' });
    expect(finish.status).toBe(400);
    expect(finish.body.error.field).toBe('status');
  });
});

describe('a worker that stops sending heartbeats', () => {
  it('has its attempt ended as unresponsive and the rollout given to another worker', async () => {
    const daemon = await startTestDaemon({
      cluster: { heartbeatSeconds: 0.2, heartbeatTimeoutMs: 3000, sweepIntervalMs: 100 },
    });
    try {
      const run = await createRun(
        daemon,
        runConfig({ name: 'unresponsive', schedule: { steps: 1, groups_per_step: 1 } }),
      );
      const claim = await waitFor('a claim', async () => {
        const res = await daemon.api('POST', `/api/runs/${run.id}/claim`, { worker: 'gone', wait_ms: 1000 });
        return res.status === 200 ? res.body : null;
      });
      expect(claim.heartbeat_s).toBe(0.2);
      const attempt = await waitFor('the unresponsive attempt', async () => {
        const attempts = await daemon.ctx.store.listAttempts(claim.rollout.id);
        return attempts.find((a: Attempt) => a.status === 'unresponsive');
      });
      expect(attempt).toMatchObject({ worker: 'gone' });
      expect(attempt.error).toContain('no heartbeat');
      // A live worker (heartbeats every 0.2s) finishes the run, its attempts never swept.
      await runWorker({
        daemonUrl: daemon.url,
        token: daemon.token,
        runId: run.id,
        concurrency: 2,
        rollout: async (ctx) => {
          await new Promise((r) => setTimeout(r, 1000));
          return chatHarness(ctx);
        },
      });
      const rollouts = await runRollouts(daemon, run.id);
      expect(rollouts.map((r) => r.status)).toEqual(['succeeded', 'succeeded']);
      const attempts = await daemon.ctx.store.listAttempts(claim.rollout.id);
      expect(attempts.map((a) => a.status)).toEqual(['unresponsive', 'succeeded']);
    } finally {
      await daemon.close();
    }
  });
});

describe('a daemon restart', () => {
  it("resumes a running run from its stored step, the interrupted step's groups cancelled", async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'harness-rl-resume-'));
    let daemon = await startTestDaemon({ dataDir });
    try {
      const run = await createRun(daemon, runConfig({ name: 'resume', schedule: { steps: 3 } }));
      const stop = new AbortController();
      const first = daemon;
      const worker = runWorker({
        daemonUrl: first.url,
        token: first.token,
        runId: run.id,
        concurrency: 4,
        rollout: chatHarness,
        signal: stop.signal,
      });
      await waitFor('step 1', async () => ((await first.ctx.store.getRun(run.id))?.step ?? 0) >= 1);
      stop.abort();
      await worker;
      await first.close();
      const before = await (async () => {
        daemon = await startTestDaemon({ dataDir, token: first.token });
        return daemon.ctx.store.getRun(run.id);
      })();
      expect(before?.status).toBe('running');
      const resumedFrom = before!.step;
      expect(resumedFrom).toBeGreaterThanOrEqual(1);
      await chatWorker(daemon, run.id);
      const after = await daemon.ctx.store.getRun(run.id);
      expect(after).toMatchObject({ status: 'finished', step: 3 });
      const metrics = await daemon.ctx.store.listRunMetrics(run.id);
      expect(metrics.map((m) => m.step).sort()).toEqual([0, 1, 2]);
      // Rollouts the first daemon left open were cancelled, not counted twice.
      const open = (await runRollouts(daemon, run.id)).filter(
        (r) => r.status === 'queued' || r.status === 'running',
      );
      expect(open).toHaveLength(0);
      // The interrupted step's groups were cancelled (the step ran again with new groups), none left running.
      const groups = (await daemon.ctx.store.listGroups(run.id, { limit: 1000 })).items;
      expect(groups.filter((g) => g.status === 'pending' || g.status === 'running')).toEqual([]);
    } finally {
      await daemon.close();
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});
