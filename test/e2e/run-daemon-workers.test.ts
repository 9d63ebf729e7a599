// A run whose config names a harness command trains with no worker started by hand: the daemon runs the
// command itself (in the run config's folder), keeps each attempt's output, stops the harness processes
// with the run and with the daemon, and starts them again when a restarted daemon resumes the run. With
// `harness.workers: external` it waits for a worker, says so (with the command to run), and tells when
// one attaches and when the last one goes away.
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { run as worker } from '../../daemon/cli/commands/worker';
import type { Run, RunWorkers } from '../../daemon/protocol/entities';
import type { DaemonEvent } from '../../daemon/protocol/events';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon';
import { alive } from '../helpers/process';
import { HELD_CHAT_HARNESS, harnessPids, runFinished } from '../helpers/runs';
import { waitFor } from '../helpers/wait';

function folder(): string {
  const dir = join(tmpdir(), `harness-rl-own-${Math.random().toString(36).slice(2)}`);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'harness.mjs'), HELD_CHAT_HARNESS);
  writeFileSync(join(dir, 'tasks.jsonl'), '{"q":"1+1"}\n{"q":"2+2"}\n');
  return dir;
}

function config(name: string, harness: Record<string, unknown> = {}, steps = 2) {
  return {
    name,
    tasks: { file: 'tasks.jsonl' },
    // Relative: it runs in the run config's folder (base_dir).
    harness: { command: [process.execPath, 'harness.mjs'], concurrency: 2, timeout_s: 60, ...harness },
    algorithm: { n: 2, max_response_tokens: 3 },
    schedule: { steps, groups_per_step: 1 },
  };
}

async function create(daemon: TestDaemon, body: unknown): Promise<Run> {
  const res = await daemon.api<Run>('POST', '/api/runs', body);
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body;
}

describe("the daemon's own workers", () => {
  let daemon: TestDaemon;
  const dirs: string[] = [];
  beforeAll(async () => {
    daemon = await startTestDaemon({ cluster: { heartbeatSeconds: 1 } });
  });
  afterAll(async () => {
    await daemon?.close();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  it('train a run with a harness command to the end, no worker started, output kept per attempt', async () => {
    const dir = folder();
    dirs.push(dir);
    const run = await create(daemon, { config: config('own workers'), base_dir: dir });
    expect(run.base_dir).toBe(dir);
    const workers = (await daemon.api<RunWorkers>('GET', `/api/runs/${run.id}/workers`)).body;
    expect(workers.mode).toBe('daemon');
    const after = await runFinished(daemon, run.id);
    expect(after.step).toBe(2);
    const rollouts = (await daemon.ctx.store.listRollouts({ run_id: run.id })).items;
    expect(rollouts).toHaveLength(4);
    expect(rollouts.every((r) => r.status === 'succeeded' && typeof r.reward === 'number')).toBe(true);
    const attempt = (await daemon.ctx.store.listAttempts(rollouts[0]!.id))[0]!;
    expect(attempt.worker).toMatch(/^daemon:/);
    const output = await daemon.api('GET', `/api/attempts/${attempt.id}/output`);
    expect(output.status).toBe(200);
    expect(output.body.output).toContain('harness on stderr');
    expect(output.body.output).toContain('"reward"');
    // The run is over: its workers are gone.
    await waitFor('no workers left', async () => {
      const w = (await daemon.api<RunWorkers>('GET', `/api/runs/${run.id}/workers`)).body;
      return w.workers.length === 0;
    });
  });

  it('stopping the run stops its harness processes', async () => {
    const dir = folder();
    dirs.push(dir);
    writeFileSync(join(dir, 'hold'), '');
    const run = await create(daemon, { config: config('stopped'), base_dir: dir });
    const pids = await waitFor('two harness processes', () => {
      const p = harnessPids(dir);
      return p.length === 2 ? p : null;
    });
    const stopped = await daemon.api<Run>('POST', `/api/runs/${run.id}/stop`, {});
    expect(stopped.body.status).toBe('stopped');
    expect(pids.filter(alive)).toEqual([]);
    await new Promise((r) => setTimeout(r, 500));
    expect(harnessPids(dir)).toEqual([]); // none started after the stop either
  });
});

describe('a daemon restart with a run of its own workers', () => {
  it('stops the harness processes on shutdown and starts them again with the resumed run', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'harness-rl-own-resume-'));
    const dir = folder();
    let daemon = await startTestDaemon({ dataDir });
    try {
      writeFileSync(join(dir, 'hold'), '');
      const run = await create(daemon, { config: config('resumed', {}, 1), base_dir: dir });
      const pids = await waitFor('harness processes', () => {
        const p = harnessPids(dir);
        return p.length === 2 ? p : null;
      });
      const token = daemon.token;
      await daemon.close();
      expect(pids.filter(alive)).toEqual([]);
      rmSync(join(dir, 'hold'));
      daemon = await startTestDaemon({ dataDir, token });
      const after = await runFinished(daemon, run.id);
      expect(after.step).toBe(1);
    } finally {
      await daemon.close();
      await rm(dataDir, { recursive: true, force: true });
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('harness.workers: external', () => {
  it('waits for a worker, with the command to run, until one attaches; says when the last one went away', async () => {
    const daemon = await startTestDaemon({ cluster: { heartbeatSeconds: 1 } });
    const dir = folder();
    const events: RunWorkers[] = [];
    const unsubscribe = daemon.ctx.store.subscribe((e: DaemonEvent) => {
      if (e.type === 'workers') events.push(e.workers);
    });
    try {
      const run = await create(daemon, {
        config: config('external', { workers: 'external' }, 1),
        base_dir: dir,
      });
      await new Promise((r) => setTimeout(r, 1000));
      const waiting = (await daemon.api<RunWorkers>('GET', `/api/runs/${run.id}/workers`)).body;
      expect(waiting).toMatchObject({ mode: 'external', workers: [], last_seen_at: null });
      expect(waiting.command).toBe(
        `harness-rl worker --run ${run.id} --url ${daemon.url} --data ${daemon.dataDir}`,
      );
      expect((await daemon.ctx.store.getRun(run.id))?.step).toBe(0);
      expect(harnessPids(dir)).toEqual([]);

      // The command as shown (here in-process, with the test daemon's token); it runs the harness in
      // the run config's folder.
      const code = await worker(['--run', run.id, '--url', daemon.url, '--token', daemon.token]);
      expect(code).toBe(0);
      await runFinished(daemon, run.id);
      const attached = events.find((w) => w.run_id === run.id && w.workers.length > 0);
      expect(attached?.workers[0]).toMatchObject({ daemon: false });
      const gone = await waitFor(
        'the last worker to go away',
        () => events.find((w) => w.run_id === run.id && w.workers.length === 0 && w.last_seen_at !== null),
        10_000,
      );
      expect(gone.mode).toBe('external');
    } finally {
      unsubscribe();
      await daemon.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
