// Off-policy sampling, end to end: the daemon in front of the Python vLLM stand-in serving a model folder
// whose generation_config.json carries Qwen3's sampling (temperature 0.6, top_k 20, top_p 0.95). vLLM 0.34
// applies those to any request that leaves them out (config/model.py:1884 get_diff_sampling_param) and
// returns raw logprobs (config/model.py:305), so a training rollout must be sent T 1 untruncated; the
// stand-in logs each request's SamplingParams as vLLM's --enable-log-requests does
// (entrypoints/serve/utils/request_logger.py:67), which is what this test reads.
//
// Needs the trainer's virtual environment (trainer/scripts/setup-venv.sh).
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RunConfig } from '../../daemon/protocol/config';
import { buildSamples, trajectoryFromCalls } from '../../daemon/samples';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon';
import { freePort } from '../helpers/process';

const ROOT = resolve(__dirname, '../..');
const PYTHON = join(ROOT, 'trainer/.venv/bin/python');
/** This checkout's trainer package (the virtual environment may hold another checkout's). */
const ENV = { ...process.env, PYTHONPATH: join(ROOT, 'trainer') };

let dir: string;
let daemon: TestDaemon;
let server: ChildProcess | undefined;
/** The stand-in's "Received request … params: SamplingParams(…)" lines, in order. */
const received: string[] = [];

beforeAll(async () => {
  if (!existsSync(PYTHON))
    throw new Error(
      `the trainer's virtual environment is missing (${PYTHON}): run trainer/scripts/setup-venv.sh`,
    );
  dir = await mkdtemp(join(tmpdir(), 'harness-rl-sampling-'));
  const modelDir = join(dir, 'model');
  await promisify(execFile)(
    PYTHON,
    [
      '-c',
      'import sys; from harness_rl_trainer.tiny import build_tiny_qwen3; build_tiny_qwen3(sys.argv[1])',
      modelDir,
    ],
    { cwd: ROOT, env: ENV },
  );
  const genPath = join(modelDir, 'generation_config.json');
  const gen = existsSync(genPath) ? JSON.parse(await readFile(genPath, 'utf8')) : {};
  await writeFile(
    genPath,
    JSON.stringify({ ...gen, do_sample: true, temperature: 0.6, top_k: 20, top_p: 0.95 }),
  );
  const port = await freePort();
  server = spawn(
    PYTHON,
    [
      '-m',
      'harness_rl_trainer.serve',
      '--model',
      modelDir,
      '--served-model-name',
      'tiny',
      '--port',
      String(port),
      '--enable-log-requests',
    ],
    { cwd: ROOT, env: ENV, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let err = '';
  server.stderr?.on('data', (b: Buffer) => {
    err += b.toString('utf8');
    const lines = err.split('\n');
    err = lines.pop() ?? '';
    received.push(...lines.filter((l) => l.includes('Received request')));
  });
  await new Promise<void>((ok, fail) => {
    const timer = setTimeout(() => fail(new Error('the stand-in did not start')), 90_000);
    server?.stdout?.on('data', (b: Buffer) => {
      if (b.toString('utf8').includes('serving')) {
        clearTimeout(timer);
        ok();
      }
    });
    server?.on('exit', (code) => fail(new Error(`the stand-in exited (${code})`)));
  });
  daemon = await startTestDaemon({ backends: [`http://127.0.0.1:${port}/v1`] });
}, 180_000);

afterAll(async () => {
  await daemon?.close();
  server?.kill('SIGTERM');
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** A rollout of a run (not started: its rollouts are made here) with a running attempt, and its client. */
async function rollout(kind: 'run' | 'standalone', algorithm: Record<string, unknown> = {}) {
  const store = daemon.ctx.store;
  const run =
    kind === 'run'
      ? await store.createRun({
          name: 'sampling',
          config: RunConfig.parse({
            name: 'sampling',
            model: { name: 'tiny' },
            tasks: { file: 'x.jsonl' },
            algorithm,
          }),
        })
      : null;
  const r = await store.createRollout(run ? { kind: 'run', run_id: run.id } : { kind: 'standalone' });
  await store.startAttempt(r.id, 'test');
  const client = new OpenAI({ baseURL: `${daemon.url}/r/${r.id}/v1`, apiKey: r.key, maxRetries: 0 });
  return { id: r.id, client };
}

async function ask(client: OpenAI, content: string) {
  await client.chat.completions.create({
    model: 'tiny',
    messages: [{ role: 'user', content }],
    max_tokens: 8,
  });
}

/** The distribution-deciding fields of the stand-in's last logged request. */
function lastParams(): Record<string, number> {
  const line = received.at(-1) ?? '';
  const out: Record<string, number> = {};
  for (const [, k, v] of line.matchAll(/(temperature|top_p|top_k|min_p|repetition_penalty)=([-\d.]+)/g))
    out[k] = Number(v);
  return out;
}

describe("a run's rollouts against a vLLM-like server with Qwen3's generation_config.json", () => {
  it('a harness that sends no sampling fields still samples at T 1 with no truncation, and the call and its sample say so', async () => {
    const { id, client } = await rollout('run');
    await ask(client, 'hello');
    expect(lastParams()).toEqual({ temperature: 1, top_p: 1, top_k: 0, min_p: 0, repetition_penalty: 1 });
    const calls = await daemon.ctx.store.listLlmCalls(id);
    expect(calls[0].sampling).toMatchObject({
      temperature: 1,
      top_k: 0,
      top_p: 1,
      source: 'run',
      overridden: null,
    });
    const rec = calls[0].response_logprobs ?? [];
    expect(rec.length).toBe(calls[0].response_ids?.length);
    const built = buildSamples([trajectoryFromCalls({ id, group_id: 'g', reward: 1 }, calls)], {
      merge: 'exact',
      advantage: 'reinforce',
      loss_agg: 'token-mean',
    });
    expect(built.samples[0].temperature).toBe(1);
  }, 60_000);

  it("the run's own sampling (T 0.8) is what the server samples with, and what the sample carries", async () => {
    const { id, client } = await rollout('run', { sampling: { temperature: 0.8 } });
    await ask(client, 'hello');
    expect(lastParams()).toMatchObject({ temperature: 0.8, top_k: 0, top_p: 1 });
    const calls = await daemon.ctx.store.listLlmCalls(id);
    const built = buildSamples([trajectoryFromCalls({ id, group_id: 'g', reward: 1 }, calls)], {
      merge: 'exact',
      advantage: 'reinforce',
      loss_agg: 'token-mean',
    });
    expect(built.samples[0].temperature).toBe(0.8);
  }, 60_000);

  it('a standalone rollout gets the server defaults, as vLLM gives them, and records that it sent none', async () => {
    const { id, client } = await rollout('standalone');
    await ask(client, 'hello');
    expect(lastParams()).toMatchObject({ temperature: 0.6, top_k: 20, top_p: 0.95 });
    const [call] = await daemon.ctx.store.listLlmCalls(id);
    expect(call.sampling).toMatchObject({ temperature: null, top_k: null, source: 'request' });
  }, 60_000);
});
