// A run's train/inference validation end to end on the reference engine: each step's agreement figures in
// its metrics, over REST, the event socket and `harness-rl run show`; a `validation:` threshold that a step
// goes past pauses the run with a message naming the step and the figure; `run resume` goes on.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCommand } from '../../daemon/cli/commands/run';
import type { RunConfigInput } from '../../daemon/protocol/config';
import type { Run, RunMetrics } from '../../daemon/protocol/entities';
import type { StepValidation } from '../../daemon/protocol/training';
import { type RolloutContext, runWorker } from '../../daemon/worker/worker';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon';
import { listenEvents } from '../helpers/events';
import { waitFor } from '../helpers/wait';

let dir: string;
let daemon: TestDaemon;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'harness-rl-validation-'));
  const tasks = Array.from({ length: 4 }, (_, i) => JSON.stringify({ prompt: `Count to ${i}` })).join('\n');
  await writeFile(join(dir, 'tasks.jsonl'), `${tasks}\n`);
  daemon = await startTestDaemon();
});
afterAll(async () => {
  await daemon?.close();
  await rm(dir, { recursive: true, force: true });
});

function runConfig(name: string, algorithm: Record<string, unknown>, validation: Record<string, unknown>) {
  return {
    name,
    tasks: { file: 'tasks.jsonl' },
    harness: { concurrency: 4, timeout_s: 60, max_attempts: 2 },
    algorithm: { n: 2, learning_rate: 0.01, max_response_tokens: 64, ...algorithm },
    schedule: { steps: 3, groups_per_step: 2 },
    validation,
  } as RunConfigInput;
}

async function chatHarness(ctx: RolloutContext): Promise<{ reward: number }> {
  const client = new OpenAI({ baseURL: ctx.openai_base_url, apiKey: ctx.key, maxRetries: 0 });
  const reply = await client.chat.completions.create({
    model: ctx.model,
    messages: [{ role: 'user', content: String((ctx.input as { prompt: string }).prompt) }],
    max_tokens: 8,
    temperature: 1,
  });
  return { reward: (reply.choices[0]?.message.content ?? '').length % 2 };
}

/** A worker on the run until `signal` aborts (a paused run keeps its workers waiting, not gone). */
function worker(runId: string, signal?: AbortSignal) {
  return runWorker({
    daemonUrl: daemon.url,
    token: daemon.token,
    runId,
    concurrency: 4,
    rollout: chatHarness,
    signal,
  });
}

async function cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runCommand([...args, '--url', daemon.url, '--token', daemon.token], {
    out: (t) => out.push(t),
    err: (t) => err.push(t),
  });
  return { code, stdout: out.join('\n'), stderr: err.join('\n') };
}

/** The run's events over GET /api/events?run_id=, collected as they come. */
const listen = (runId: string) => listenEvents(daemon, `?run_id=${runId}`);

const getRun = async (id: string) => (await daemon.api<Run>('GET', `/api/runs/${id}`)).body;

describe('train/inference validation of a run on the reference engine', () => {
  it('pauses the run when steps go past a threshold, names the step and figure, and resumes on request', async () => {
    // A TIS cap of 0.5 caps every token where trainer and rollout agree (exp(0) = 1 ≥ 0.5): the capped
    // share is 1 at every step, past 0.2; with patience 2 the run pauses after step 1.
    const config = runConfig('capped', { tis_cap: 0.5 }, { tis_capped_fraction_max: 0.2, patience: 2 });
    const created = await daemon.api<Run>('POST', '/api/runs', { config, base_dir: dir });
    expect(created.status).toBe(201);
    const id = created.body.id;
    const socket = await listen(id);
    const stop = new AbortController();
    const working = worker(id, stop.signal);
    await waitFor('the run paused', async () => (await getRun(id)).status === 'paused', 60_000);
    const paused = await getRun(id);
    expect(paused.step).toBe(2);
    expect(paused.error).toBe(
      'validation paused the run after step 1: tis_capped_fraction 1 > 0.2 (validation.tis_capped_fraction_max) ' +
        `(2 steps in a row, patience 2). Resume with: harness-rl run resume ${id}`,
    );
    // A paused run is not over: its workers wait and claim nothing.
    const claim = await daemon.api('POST', `/api/runs/${id}/claim`, { wait_ms: 0 });
    expect(claim.status).toBe(204);

    const metrics = (await daemon.api<RunMetrics[]>('GET', `/api/runs/${id}/metrics`)).body;
    expect(metrics.map((m) => m.step)).toEqual([0, 1]);
    for (const { metrics: m } of metrics) {
      expect(m.rollout_logprob_tokens).toBeGreaterThan(0);
      expect(m.tis_capped_fraction).toBe(1);
      expect(m.tis_weight_mean).toBeCloseTo(0.5, 12);
      expect(m.logprob_diff_max).toBeLessThan(1e-4);
      expect(m.validation_breaches).toBe(1);
      expect(m).toHaveProperty('prob_correlation');
      expect(m).toHaveProperty('clip_fraction');
    }
    const step1 = await daemon.api<StepValidation>('GET', `/api/runs/${id}/steps/1/validation`);
    expect(step1.status).toBe(200);
    expect(step1.body.tokens).toBe(metrics[1]!.metrics.rollout_logprob_tokens);
    expect(step1.body.scatter).toHaveLength(step1.body.tokens);
    for (const [rollout, trainer] of step1.body.scatter)
      expect(Math.abs(rollout - trainer)).toBeLessThan(1e-3);
    const none = await daemon.api('GET', `/api/runs/${id}/steps/7/validation`);
    expect(none.status).toBe(404);
    expect(none.body.error.field).toBe('step');
    const badStep = await daemon.api('GET', `/api/runs/${id}/steps/one/validation`);
    expect(badStep.status).toBe(400);

    // The event socket carried the figures with each step's metrics and the pause with its message.
    const metricEvents = socket.events.filter((e) => e.type === 'run_metrics');
    expect(metricEvents.map((e) => e.metrics.metrics.tis_capped_fraction)).toEqual([1, 1]);
    expect(
      socket.events.some(
        (e) => e.type === 'run' && e.run.status === 'paused' && e.run.error === paused.error,
      ),
    ).toBe(true);

    const shown = await cli(['show', id]);
    expect(shown.code, shown.stderr).toBe(0);
    expect(JSON.parse(shown.stdout).validation).toMatchObject({
      step: 1,
      tis_capped_fraction: 1,
      validation_breaches: 1,
    });

    // Resumed, the count of steps in a row starts over: step 2 alone does not pause, the run finishes.
    const resumed = await cli(['resume', id]);
    expect(resumed.stdout).toBe(`run ${id}: running from step 2`);
    await waitFor('the run finished', async () => (await getRun(id)).status === 'finished', 60_000);
    expect(await getRun(id)).toMatchObject({ step: 3, error: null });
    stop.abort();
    await working;
    socket.close();
    const again = await daemon.api('POST', `/api/runs/${id}/resume`, {});
    expect(again.status).toBe(409);
    expect(again.body.error).toMatchObject({ field: 'id', message: expect.stringContaining('is finished') });
  });

  it('the reference engine agrees with itself: strict agreement thresholds never pause its run', async () => {
    const config = runConfig(
      'agrees',
      {},
      { logprob_diff_max_max: 1e-4, prob_correlation_min: 0.999, tis_capped_fraction_max: 0 },
    );
    const created = await daemon.api<Run>('POST', '/api/runs', { config, base_dir: dir });
    const id = created.body.id;
    await worker(id);
    expect(await getRun(id)).toMatchObject({ status: 'finished', step: 3, error: null });
    const metrics = (await daemon.api<RunMetrics[]>('GET', `/api/runs/${id}/metrics`)).body;
    for (const { metrics: m } of metrics) {
      expect(m.logprob_diff_max).toBeLessThan(1e-4);
      expect(m.tis_weight_mean).toBeCloseTo(1, 4);
      expect(m.validation_breaches).toBe(0);
    }
  });
});
