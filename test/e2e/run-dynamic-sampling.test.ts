// schedule.dynamic_sampling end to end on the reference engine: a scripted harness gives the groups of
// some tasks uniform rewards; a step samples more rounds (the next tasks in the seeded order) until
// groups_per_step groups are informative, keeps the first ones, and stops after max_rounds.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { refillTasks, tasksForStep } from '../../daemon/api/task-order';
import { runCommand } from '../../daemon/cli/commands/run';
import type { RunConfigInput } from '../../daemon/protocol/config';
import type { Group, Rollout, Run, Task } from '../../daemon/protocol/entities';
import { type RolloutContext, runWorker } from '../../daemon/worker/worker';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon';
import { waitFor } from '../helpers/wait';

let dir: string;
let daemon: TestDaemon;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'harness-rl-dynsamp-'));
  const tasks = Array.from({ length: 8 }, (_, i) => JSON.stringify({ prompt: `Say ${i}` })).join('\n');
  await writeFile(join(dir, 'tasks.jsonl'), `${tasks}\n`);
  daemon = await startTestDaemon();
});
afterAll(async () => {
  await daemon?.close();
  await rm(dir, { recursive: true, force: true });
});

const SEED = 3;

function runConfig(name: string, schedule: Record<string, unknown>, n = 2): RunConfigInput {
  return {
    name,
    tasks: { file: 'tasks.jsonl' },
    harness: { concurrency: 4, timeout_s: 60, max_attempts: 1 },
    algorithm: { n, learning_rate: 0.01, max_response_tokens: 64 },
    schedule: { steps: 1, groups_per_step: 2, seed: SEED, ...schedule },
  } as RunConfigInput;
}

async function createRun(config: RunConfigInput): Promise<{ run: Run; train: Task[] }> {
  const res = await daemon.api<Run>('POST', '/api/runs', { config, base_dir: dir });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  const train = (await daemon.ctx.store.listTasks(res.body.id, 'train')).sort((a, b) => a.index - b.index);
  return { run: res.body, train };
}

/**
 * A worker whose harness makes one chat call; the groups of the tasks in `informative` get rewards 0 and 1
 * (in the order their rollouts finish), every other group reward 1 for all its rollouts.
 */
function worker(runId: string, informative: ReadonlySet<string>) {
  const finished = new Map<string, number>();
  return runWorker({
    daemonUrl: daemon.url,
    token: daemon.token,
    runId,
    concurrency: 4,
    rollout: async (ctx: RolloutContext) => {
      const client = new OpenAI({ baseURL: ctx.openai_base_url, apiKey: ctx.key, maxRetries: 0 });
      await client.chat.completions.create({
        model: ctx.model,
        messages: [{ role: 'user', content: String((ctx.input as { prompt: string }).prompt) }],
        max_tokens: 4,
      });
      if (!informative.has(ctx.rollout.task_id ?? '')) return { reward: 1 };
      const group = ctx.rollout.group_id ?? '';
      const k = finished.get(group) ?? 0;
      finished.set(group, k + 1);
      return { reward: k % 2 };
    },
  });
}

async function stepMetrics(runId: string): Promise<Record<string, number | null>[]> {
  const rows = (await daemon.ctx.store.listRunMetrics(runId)).sort((a, b) => a.step - b.step);
  return rows.map((r) => r.metrics);
}

/** `harness-rl run show ID --json`, in process. */
async function show(runId: string): Promise<Record<string, unknown>> {
  const lines: string[] = [];
  const io = { out: (t: string) => lines.push(t), err: (t: string) => lines.push(t) };
  expect(await runCommand(['show', runId, '--url', daemon.url, '--token', daemon.token, '--json'], io)).toBe(
    0,
  );
  return JSON.parse(lines.join('\n'));
}

async function groupsOf(runId: string): Promise<Group[]> {
  return (await daemon.ctx.store.listGroups(runId, { limit: 1000 })).items;
}

async function rolloutsOf(runId: string): Promise<Rollout[]> {
  return (await daemon.ctx.store.listRollouts({ run_id: runId, limit: 1000 })).items;
}

/** The tasks of step `step`'s rounds 0..rounds-1, as the loop picks them. */
function rounds(train: Task[], step: number, count: number): Task[][] {
  return [0, 1, 2, 3]
    .map((r) => (r === 0 ? tasksForStep(train, step, 2, SEED) : refillTasks(train, step, 2, SEED, r)))
    .slice(0, count);
}

describe('schedule.dynamic_sampling', () => {
  it('samples another round while too few groups are informative and keeps the first groups_per_step', async () => {
    const { run, train } = await createRun(runConfig('refill', { dynamic_sampling: { max_rounds: 3 } }));
    const [first, second, third] = rounds(train, 0, 3);
    // Round 0: one informative group of two; round 1: both informative (three in all, one too many).
    const informative = new Set([first[1].id, second[0].id, second[1].id]);
    await worker(run.id, informative);

    expect((await daemon.ctx.store.getRun(run.id))?.status).toBe('finished');
    const [m] = await stepMetrics(run.id);
    expect(m).toMatchObject({
      sampling_rounds: 2,
      sampled_groups: 4,
      informative_groups: 3,
      kept_groups: 2,
      zero_variance_groups: 1,
      dropped_groups: 1,
      rollouts: 8,
      samples: 4,
    });
    expect(m.loss).toBeTypeOf('number');
    // The groups sampled are the two rounds' tasks in order; no third round, no task twice.
    const groups = (await groupsOf(run.id)).sort((a, b) => a.id.localeCompare(b.id)); // ids: creation order
    expect(groups.map((g) => g.task_id)).toEqual([...first, ...second].map((t) => t.id));
    expect(groups.every((g) => g.step === 0)).toBe(true);
    // Trained on: round 0's informative group and round 1's first; the uniform and the surplus dropped.
    expect(groups.map((g) => g.status)).toEqual(['dropped', 'complete', 'complete', 'dropped']);
    expect(groups.map((g) => g.task_id)).not.toContain(third[0].id);
    // Built: round 0's two groups (the uniform one dropped) and the first of round 1; the surplus
    // informative group (the last sampled) never reached the samples stage.
    const built = new Set((await rolloutsOf(run.id)).filter((r) => r.stats !== null).map((r) => r.task_id));
    expect([...built].sort()).toEqual([first[0].id, first[1].id, second[0].id].sort());
  });

  it('stops after max_rounds when every group is uniform and goes on without training the step', async () => {
    const { run } = await createRun(runConfig('uniform', { steps: 2, dynamic_sampling: { max_rounds: 2 } }));
    await worker(run.id, new Set());
    const after = await daemon.ctx.store.getRun(run.id);
    expect(after).toMatchObject({ status: 'finished', step: 2, model_version: 0 });
    const metrics = await stepMetrics(run.id);
    expect(metrics).toHaveLength(2);
    for (const m of metrics) {
      expect(m).toMatchObject({
        sampling_rounds: 3,
        sampled_groups: 6,
        informative_groups: 0,
        kept_groups: 0,
        zero_variance_groups: 6,
        samples: 0,
        loss: null,
      });
    }
    // `harness-rl run show` sums the steps' figures.
    expect((await show(run.id)).dynamic_sampling).toEqual({
      steps: 2,
      sampling_rounds: 6,
      sampled_groups: 12,
      informative_groups: 0,
      kept_groups: 0,
      mean_sampling_rounds: 3,
      steps_without_kept_groups: 2,
    });
    // Three rounds of two tasks: six distinct tasks of the eight in each step.
    for (const step of [0, 1]) {
      const tasks = (await groupsOf(run.id)).filter((g) => g.step === step).map((g) => g.task_id);
      expect(new Set(tasks).size).toBe(6);
    }
  });

  it('needs no extra round when the first is informative, and works with the async overlap', async () => {
    const { run, train } = await createRun(
      runConfig('async', { steps: 3, mode: 'async', max_staleness: 1, dynamic_sampling: { max_rounds: 3 } }),
    );
    await worker(run.id, new Set(train.map((t) => t.id)));
    expect(await daemon.ctx.store.getRun(run.id)).toMatchObject({ status: 'finished', step: 3 });
    const metrics = await stepMetrics(run.id);
    expect(metrics).toHaveLength(3);
    for (const m of metrics) {
      expect(m).toMatchObject({ sampling_rounds: 1, sampled_groups: 2, kept_groups: 2, samples: 4 });
      expect(m.staleness).toBeLessThanOrEqual(1);
    }
  });

  it('without it a step trains on the groups it sampled and reports no sampling rounds', async () => {
    const { run } = await createRun(runConfig('off', {}));
    await worker(run.id, new Set());
    const [m] = await stepMetrics(run.id);
    expect(m).toMatchObject({ rollouts: 4, zero_variance_groups: 2, dropped_groups: 0, samples: 4 });
    expect(m).not.toHaveProperty('sampling_rounds');
    expect(await show(run.id)).not.toHaveProperty('dynamic_sampling');
  });

  it('samples no extra round after a round whose rollouts all failed: the step fails as without it', async () => {
    const { run } = await createRun(runConfig('failing', { dynamic_sampling: { max_rounds: 3 } }));
    await runWorker({
      daemonUrl: daemon.url,
      token: daemon.token,
      runId: run.id,
      concurrency: 4,
      rollout: async () => {
        throw new Error('harness crashed');
      },
    });
    const after = await daemon.ctx.store.getRun(run.id);
    expect(after?.status).toBe('failed');
    expect(after?.error).toContain('step 0 has no rollout to train on: 4 of its 4 rollouts failed');
    expect(await groupsOf(run.id)).toHaveLength(2);
  });

  it('is refused with groups of one rollout, naming the field', async () => {
    const res = await daemon.api('POST', '/api/runs', {
      config: runConfig('one', { dynamic_sampling: {} }, 1),
      base_dir: dir,
    });
    expect(res.status).toBe(400);
    expect(res.body.error.field).toBe('config.schedule.dynamic_sampling');
    expect(res.body.error.message).toContain('algorithm.n is 1');
  });
});

describe('a daemon restart during an extra round', () => {
  it('starts the step over from its first round, every group of the interrupted rounds cancelled', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'harness-rl-dynsamp-resume-'));
    let first: TestDaemon | null = await startTestDaemon({ dataDir });
    let second: TestDaemon | null = null;
    try {
      const config = runConfig('resume', { dynamic_sampling: { max_rounds: 3 } });
      const res = await first.api<Run>('POST', '/api/runs', { config, base_dir: dir });
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      const runId = res.body.id;
      // Round 0 finishes uniform; the rollouts of round 1 hang until the worker stops.
      const stop = new AbortController();
      const own = new Set<string>();
      const store = first.ctx.store;
      const hanging = runWorker({
        daemonUrl: first.url,
        token: first.token,
        runId,
        concurrency: 4,
        signal: stop.signal,
        rollout: async (ctx) => {
          if (own.size === 0) for (const g of (await store.listGroups(runId)).items) own.add(g.id);
          if (own.has(ctx.rollout.group_id ?? '')) return { reward: 1 };
          await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve, { once: true }));
          throw new Error('stopped');
        },
      });
      await waitFor('round 1', async () => (await store.listGroups(runId)).items.length >= 4);
      stop.abort();
      await hanging;
      await first.close();
      first = null;

      second = await startTestDaemon({ dataDir });
      await runWorker({
        daemonUrl: second.url,
        token: second.token,
        runId,
        concurrency: 4,
        rollout: async () => ({ reward: 1 }),
      });
      expect(await second.ctx.store.getRun(runId)).toMatchObject({ status: 'finished', step: 1 });
      const [m] = (await second.ctx.store.listRunMetrics(runId)).map((r) => r.metrics);
      // The step ran again from round 0: all four rounds, counted once.
      expect(m).toMatchObject({ sampling_rounds: 4, sampled_groups: 8, kept_groups: 0 });
      const groups = (await second.ctx.store.listGroups(runId, { limit: 1000 })).items;
      expect(groups.filter((g) => g.status === 'cancelled')).toHaveLength(4);
      // Every group of the four rounds was uniform: none trained on.
      expect(groups.filter((g) => g.status === 'dropped')).toHaveLength(8);
    } finally {
      await first?.close();
      await second?.close();
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});
