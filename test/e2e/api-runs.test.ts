// Runs over the REST API: created from a YAML config with a tasks file, inspected, stopped; plus the
// read routes around them (groups, metrics, model versions, nodes, llm calls, recordings).
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfigFile } from '../../daemon/config/load';
import type { CreatedRecording, GroupDetail, RecordingDetail } from '../../daemon/protocol/api';
import type { Group, LlmCall, Page, Run, Task } from '../../daemon/protocol/entities';
import { newCall } from '../../daemon/store/test-calls';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon';

let daemon: TestDaemon;
let dir: string;

const TASKS = Array.from({ length: 8 }, (_, i) => ({ question: `${i} + ${i}`, answer: 2 * i }));

async function writeConfig(name: string, extra = ''): Promise<string> {
  const file = join(dir, `${name}.yaml`);
  await writeFile(
    file,
    `# a run config as a user writes it
run:
  name: ${name}
  tasks:
    file: tasks.jsonl
    validation_fraction: 0.25
    shuffle_seed: 7
  algorithm:
    n: 2
${extra}`,
  );
  return file;
}

async function createRunFrom(file: string) {
  const { config, baseDir } = await loadConfigFile(file);
  return daemon.api<Run>('POST', '/api/runs', { config: config.run, base_dir: baseDir });
}

beforeAll(async () => {
  daemon = await startTestDaemon();
  dir = await mkdtemp(join(tmpdir(), 'harness-rl-runs-'));
  await writeFile(join(dir, 'tasks.jsonl'), `${TASKS.map((t) => JSON.stringify(t)).join('\n')}\n\n`);
});
afterAll(async () => {
  await daemon?.close();
  await rm(dir, { recursive: true, force: true });
});

function bySplit(tasks: Task[]) {
  return {
    train: tasks.filter((t) => t.split === 'train').map((t) => t.input),
    validation: tasks.filter((t) => t.split === 'validation').map((t) => t.input),
  };
}

describe('runs', () => {
  it('a run created from a YAML config stores its tasks split by the seeded shuffle and is listed', async () => {
    const created = await createRunFrom(await writeConfig('split-a'));
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ name: 'split-a', step: 0, config: { algorithm: { n: 2 } } });
    expect(['created', 'running']).toContain(created.body.status);

    const tasks = await daemon.ctx.store.listTasks(created.body.id);
    expect(tasks).toHaveLength(8);
    const split = bySplit(tasks);
    expect(split.validation).toHaveLength(2);
    expect(
      [...split.train, ...split.validation].sort((a, b) =>
        JSON.stringify(a).localeCompare(JSON.stringify(b)),
      ),
    ).toEqual([...TASKS].sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b))));

    // The same seed gives the same split.
    const again = await createRunFrom(await writeConfig('split-b'));
    expect(bySplit(await daemon.ctx.store.listTasks(again.body.id))).toEqual(split);

    const listed = await daemon.api<Page<Run>>('GET', '/api/runs');
    expect(listed.body.items.map((r) => r.id)).toEqual(
      expect.arrayContaining([created.body.id, again.body.id]),
    );
    expect((await daemon.api<Run>('GET', `/api/runs/${created.body.id}`)).body.name).toBe('split-a');
    await daemon.api('POST', `/api/runs/${created.body.id}/stop`);
    await daemon.api('POST', `/api/runs/${again.body.id}/stop`);
  });

  it('a tasks file with a bad line is a 400 naming the line, and no run is created', async () => {
    await writeFile(join(dir, 'bad.jsonl'), '{"ok": 1}\n{"broken": \n');
    const file = await writeConfig('bad-tasks');
    const { config } = await loadConfigFile(file);
    const before = (await daemon.api<Page<Run>>('GET', '/api/runs')).body.items.length;
    const res = await daemon.api('POST', '/api/runs', {
      config: { ...config.run, tasks: { ...config.run!.tasks, file: 'bad.jsonl' } },
      base_dir: dir,
    });
    expect(res.status).toBe(400);
    expect(res.body.error.field).toBe('config.tasks.file');
    expect(res.body.error.message).toContain('line 2');
    expect((await daemon.api<Page<Run>>('GET', '/api/runs')).body.items.length).toBe(before);
  });

  it('stopping a run stops it once; stopping a finished run is a conflict', async () => {
    const run = (await createRunFrom(await writeConfig('stoppable'))).body;
    const stopped = await daemon.api<Run>('POST', `/api/runs/${run.id}/stop`);
    expect(stopped.status).toBe(200);
    expect(stopped.body.status).toBe('stopped');
    expect((await daemon.api<Run>('POST', `/api/runs/${run.id}/stop`)).body.status).toBe('stopped');

    const done = await daemon.ctx.store.createRun({ name: 'done', config: {} });
    await daemon.ctx.store.updateRun(done.id, { status: 'finished' });
    const conflict = await daemon.api('POST', `/api/runs/${done.id}/stop`);
    expect(conflict.status).toBe(409);
    expect(conflict.body.error.message).toContain('finished');
  });

  it("a run's metrics, groups (paged) and a group with its rollouts", async () => {
    const store = daemon.ctx.store;
    const run = await store.createRun({ name: 'inspected', config: {} });
    await store.addRunMetrics(run.id, 1, { mean_reward: 0.5, loss: null });
    await store.addRunMetrics(run.id, 2, { mean_reward: 0.75, loss: 0.1 });
    const metrics = await daemon.api('GET', `/api/runs/${run.id}/metrics`);
    expect(metrics.body.map((m: { step: number }) => m.step)).toEqual([1, 2]);
    expect(metrics.body[1].metrics).toEqual({ mean_reward: 0.75, loss: 0.1 });

    const groups: Group[] = [];
    for (let i = 0; i < 5; i++)
      groups.push(await store.createGroup({ run_id: run.id, task_id: null, step: 0, size: 2 }));
    await store.createRollouts([
      { kind: 'run', run_id: run.id, group_id: groups[0]!.id, input: 'a' },
      { kind: 'run', run_id: run.id, group_id: groups[0]!.id, input: 'b' },
    ]);
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const path: string = `/api/runs/${run.id}/groups?limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
      const page = (await daemon.api<Page<Group>>('GET', path)).body;
      expect(page.items.length).toBeLessThanOrEqual(2);
      seen.push(...page.items.map((g) => g.id));
      cursor = page.next_cursor;
    } while (cursor);
    expect(seen.sort()).toEqual(groups.map((g) => g.id).sort());

    // the rollout filter on groups: only the group whose rollouts are queued; a bad status is a 400
    const queued = (await daemon.api<Page<Group>>('GET', `/api/runs/${run.id}/groups?status=queued`)).body;
    expect(queued.items.map((g) => g.id)).toEqual([groups[0]!.id]);
    const rewarded = await daemon.api<Page<Group>>('GET', `/api/runs/${run.id}/groups?min_reward=0`);
    expect(rewarded.body.items).toEqual([]);
    expect((await daemon.api('GET', `/api/runs/${run.id}/groups?status=bogus`)).status).toBe(400);

    const group = await daemon.api<GroupDetail>('GET', `/api/groups/${groups[0]!.id}`);
    expect(group.body.rollouts.map((r) => r.input).sort()).toEqual(['a', 'b']);
    expect((await daemon.api('GET', '/api/runs/run_nope/metrics')).status).toBe(404);
    expect((await daemon.api('GET', '/api/runs/run_nope/groups')).status).toBe(404);
  });

  it('model versions filter by run; nodes and llm calls are served as stored', async () => {
    const store = daemon.ctx.store;
    const run = await store.createRun({ name: 'versions', config: {} });
    await store.addModelVersion({ run_id: run.id, version: 1, path: '/ckpt/1', metrics: null });
    await store.addModelVersion({ run_id: null, version: 7, path: null, metrics: null });
    const versions = await daemon.api('GET', `/api/model-versions?run_id=${run.id}`);
    expect(versions.body.map((v: { version: number }) => v.version)).toEqual([1]);

    await store.upsertNode({
      id: 'node-1',
      name: 'gpu-1',
      kind: 'inference',
      url: 'ws://10.0.0.1:7000',
      status: 'ready',
      model_version: 1,
      detail: null,
      last_seen_at: new Date().toISOString(),
    });
    expect((await daemon.api('GET', '/api/nodes')).body).toMatchObject([{ id: 'node-1', status: 'ready' }]);

    const rollout = await store.createRollout({ kind: 'standalone' });
    const call = newCall({
      rollout_id: rollout.id,
      request: { messages: [{ role: 'user', content: 'hi' }] },
      response: { choices: [] },
      model: 'reference',
      model_version: 1,
      queue_ms: 0,
      ttft_ms: 1,
      total_ms: 2,
    });
    const recorded = await store.recordLlmCall(call);
    const fetched = await daemon.api<LlmCall>('GET', `/api/llm-calls/${recorded.id}`);
    expect(fetched.body).toMatchObject({
      prompt_ids: [1, 2, 3],
      response_ids: [4, 5],
      response_logprobs: [-0.5, -0.25],
    });
    const detail = await daemon.api('GET', `/api/rollouts/${rollout.id}`);
    expect(detail.body.llm_calls).toMatchObject([
      { id: recorded.id, wire_api: 'chat', status: 'ok', model_version: 1 },
    ]);
  });

  it('a recording gives a key and the unscoped base URLs, lists, shows its calls and stops once', async () => {
    const created = await daemon.api<CreatedRecording>('POST', '/api/recordings', {
      name: 'my session',
      upstream: { kind: 'anthropic', base_url: 'https://api.anthropic.com' },
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      name: 'my session',
      status: 'active',
      openai_base_url: `${daemon.url}/v1`,
      anthropic_base_url: daemon.url,
    });
    expect(created.body.key).toMatch(/^hrk_/);
    expect(JSON.stringify(created.body.upstream)).not.toContain(created.body.key);
    const listed = await daemon.api('GET', '/api/recordings');
    expect(listed.body.map((r: { id: string }) => r.id)).toContain(created.body.id);
    const shown = await daemon.api<RecordingDetail>('GET', `/api/recordings/${created.body.id}`);
    expect(shown.body.calls).toEqual([]);
    const stopped = await daemon.api('POST', `/api/recordings/${created.body.id}/stop`);
    expect(stopped.body.status).toBe('stopped');
    expect((await daemon.api('POST', `/api/recordings/${created.body.id}/stop`)).status).toBe(409);
  });
});
