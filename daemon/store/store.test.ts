import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { NEUTRAL_SAMPLING } from '../protocol/algorithm';
import {
  Attempt,
  Group,
  LlmCall,
  ModelVersion,
  NodeInfo,
  Recording,
  Reward,
  Rollout,
  Run,
  RunMetrics,
  Task,
} from '../protocol/entities';
import { DaemonEvent } from '../protocol/events';
import { encodeIds } from './codec';
import { keyHash, newKey } from './ids';
import { JsonText } from './json-text';
import { migrations } from './migrations';
import { openStore } from './open';
import { freshStoreSpace, PG_SHOWN, postgresProblem, type TestStoreSpace } from './pg-testing';
import type { SqlStore } from './sql-store';
import { type Store, StoreError } from './store';
import { newCall } from './test-calls';

/** Every migration's version, in order (what an upgraded store has applied). */
const ALL_VERSIONS = migrations('sqlite').map((m) => m.version);

const pgProblem = await postgresProblem();

const backends: { name: 'sqlite' | 'postgres'; fresh(): Promise<TestStoreSpace> }[] = [
  { name: 'sqlite', fresh: async () => freshStoreSpace('sqlite', 'hrl-store-') },
  { name: 'postgres', fresh: async () => freshStoreSpace('postgres', 'hrl-store-', 't_') },
];

if (pgProblem) {
  if (process.env.CI) {
    describe('postgres store', () => {
      it(`PostgreSQL is reachable at ${PG_SHOWN} (run scripts/start-postgres.sh)`, () => {
        throw new Error(`PostgreSQL is unreachable in CI: ${pgProblem}`);
      });
    });
  } else {
    console.warn(
      `\n  SKIPPING the PostgreSQL store tests: ${PG_SHOWN} is unreachable (${pgProblem}).\n  Run scripts/start-postgres.sh or set HARNESS_RL_TEST_PG.\n`,
    );
  }
}

const active = backends.filter((b) => b.name === 'sqlite' || !pgProblem);

async function storeError(p: Promise<unknown>): Promise<StoreError> {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(StoreError);
    return err as StoreError;
  }
  throw new Error('expected a StoreError, the call succeeded');
}

describe.each(active)('$name store', (backend) => {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    while (cleanups.length > 0) await cleanups.pop()!();
  });

  async function fresh(): Promise<{ store: Store; db: TestStoreSpace; events: DaemonEvent[] }> {
    const db = await backend.fresh();
    const store = await openStore(db.spec, db.dataDir);
    const events: DaemonEvent[] = [];
    store.subscribe((e) => events.push(DaemonEvent.parse(e)));
    cleanups.push(async () => {
      await store.close();
      await db.drop();
    });
    return { store, db, events };
  }

  async function runWithGroup(store: Store, size = 2) {
    const run = await store.createRun({ name: 'math', config: { algorithm: { n: size } } });
    const [task] = await store.createTasks(run.id, [{ input: { question: '1+1' }, split: 'train' }]);
    const group = await store.createGroup({ run_id: run.id, task_id: task.id, step: 0, size });
    return { run, task, group };
  }

  it('creates, updates and pages runs newest first, announcing each change', async () => {
    const { store, events } = await fresh();
    const runs: Run[] = [];
    for (let i = 0; i < 5; i++) runs.push(Run.parse(await store.createRun({ name: `r${i}`, config: { i } })));
    expect(runs[0]).toMatchObject({
      status: 'created',
      step: 0,
      model_version: 0,
      error: null,
      config: { i: 0 },
    });
    expect(runs[0].id).toMatch(/^run_/);

    const first = await store.listRuns({ limit: 2 });
    expect(first.items.map((r) => r.name)).toEqual(['r4', 'r3']);
    const second = await store.listRuns({ limit: 2, cursor: first.next_cursor! });
    expect(second.items.map((r) => r.name)).toEqual(['r2', 'r1']);
    const third = await store.listRuns({ limit: 2, cursor: second.next_cursor! });
    expect(third.items.map((r) => r.name)).toEqual(['r0']);
    expect(third.next_cursor).toBeNull();

    const updated = Run.parse(
      await store.updateRun(runs[1].id, { status: 'running', step: 3, model_version: 2 }),
    );
    expect(updated).toMatchObject({ status: 'running', step: 3, model_version: 2 });
    expect(await store.getRun(runs[1].id)).toEqual(updated);
    const failed = await store.updateRun(runs[1].id, { status: 'failed', error: 'trainer died' });
    expect(failed).toMatchObject({ status: 'failed', step: 3, error: 'trainer died' });

    expect(events.filter((e) => e.type === 'run')).toHaveLength(7);
    expect(await store.getRun('run_nope')).toBeNull();
    const err = await storeError(store.updateRun('run_nope', { step: 1 }));
    expect(err).toMatchObject({ code: 'not_found', field: 'run_id' });
    expect(await storeError(store.updateRun(runs[0].id, { status: 'bogus' as never }))).toMatchObject({
      code: 'invalid',
      field: 'status',
    });
  });

  it('keeps training and evaluation runs apart: each kind listed and paged by itself', async () => {
    const { store, events } = await fresh();
    const kinds = ['training', 'evaluation', 'evaluation', 'training', 'evaluation'] as const;
    for (const [i, kind] of kinds.entries()) await store.createRun({ name: `r${i}`, config: {}, kind });
    const plain = await store.createRun({ name: 'r5', config: {}, base_dir: '/w' });
    expect(plain.kind).toBe('training');
    const names = async (kind?: 'training' | 'evaluation') =>
      (await store.listRuns({ kind })).items.map((r) => `${r.name} ${r.kind}`);
    expect(await names('training')).toEqual(['r5 training', 'r3 training', 'r0 training']);
    expect(await names('evaluation')).toEqual(['r4 evaluation', 'r2 evaluation', 'r1 evaluation']);
    expect(await names()).toHaveLength(6);
    const first = await store.listRuns({ kind: 'evaluation', limit: 2 });
    const rest = await store.listRuns({ kind: 'evaluation', limit: 2, cursor: first.next_cursor! });
    expect(rest).toMatchObject({ items: [{ name: 'r1' }], next_cursor: null });
    // what is stored is what was said, in the events too
    const r4 = first.items[0]!;
    expect(await store.getRun(r4.id)).toEqual(r4);
    expect(events.find((e) => e.type === 'run' && e.run.id === r4.id)).toMatchObject({
      run: { kind: 'evaluation' },
    });
    expect(
      await storeError(store.createRun({ name: 'x', config: {}, kind: 'bogus' as never })),
    ).toMatchObject({ code: 'invalid', field: 'kind' });
    expect(await storeError(store.listRuns({ kind: 'bogus' as never }))).toMatchObject({ field: 'kind' });
  });

  it('marks the runs of evaluations stored before run kinds as evaluation runs on upgrade', async () => {
    const db = await backend.fresh();
    cleanups.push(() => db.drop());
    const old = await openStore(db.spec, db.dataDir, { schemaVersion: 19 });
    const trained = await old.createRun({ name: 'trained', config: {} });
    const scored = await old.createRun({ name: 'scored', config: {} });
    const spec = { pass_threshold: 1 };
    await old.createEvaluation({ name: 'e', run_id: scored.id, split: 'test', attempts: 1, seed: 0, spec });
    await old.close();
    const upgraded = await openStore(db.spec, db.dataDir);
    cleanups.push(() => upgraded.close());
    expect(await upgraded.getRun(trained.id)).toMatchObject({ kind: 'training' });
    expect(await upgraded.getRun(scored.id)).toMatchObject({ kind: 'evaluation' });
  });

  it('merges run metrics of a step and lists them in step order', async () => {
    const { store, events } = await fresh();
    const run = await store.createRun({ name: 'r', config: {} });
    await store.addRunMetrics(run.id, 2, { loss: 0.5 });
    await store.addRunMetrics(run.id, 1, { loss: 0.9, kl: null });
    const merged = RunMetrics.parse(await store.addRunMetrics(run.id, 2, { val_reward: 0.75 }));
    expect(merged.metrics).toEqual({ loss: 0.5, val_reward: 0.75 });
    const list = await store.listRunMetrics(run.id);
    expect(list.map((m) => [m.step, m.metrics])).toEqual([
      [1, { loss: 0.9, kl: null }],
      [2, { loss: 0.5, val_reward: 0.75 }],
    ]);
    expect(events.filter((e) => e.type === 'run_metrics')).toHaveLength(3);
    expect(await storeError(store.addRunMetrics('run_nope', 0, {}))).toMatchObject({ code: 'not_found' });
    expect(await storeError(store.listRunMetrics('run_nope'))).toMatchObject({ code: 'not_found' });
  });

  it("keeps a step's train/inference agreement with its scatter, one per step, and names a bad one", async () => {
    const { store } = await fresh();
    const run = await store.createRun({ name: 'r', config: {} });
    const v = {
      tokens: 3,
      logprob_diff_mean: 0.25,
      logprob_diff_max: 0.5,
      prob_correlation: null,
      tis_weight_mean: 1,
      tis_capped_fraction: 0,
      scatter: [[0.5, 0.25] as [number, number]],
    };
    await store.setStepValidation(run.id, 4, v);
    expect(await store.getStepValidation(run.id, 4)).toEqual(v);
    await store.setStepValidation(run.id, 4, { ...v, tokens: 7 });
    expect((await store.getStepValidation(run.id, 4))?.tokens).toBe(7);
    expect(await store.getStepValidation(run.id, 5)).toBeNull();
    expect(await storeError(store.setStepValidation('run_nope', 0, v))).toMatchObject({ field: 'run_id' });
    const bad = { ...v, scatter: 'x' } as never;
    expect(await storeError(store.setStepValidation(run.id, 0, bad))).toMatchObject({ field: 'validation' });
  });

  it('numbers tasks per run and filters them by split', async () => {
    const { store } = await fresh();
    const run = await store.createRun({ name: 'r', config: {} });
    await store.createTasks(run.id, [
      { input: { q: 'a' }, split: 'train' },
      { input: { q: 'b' }, split: 'validation' },
    ]);
    const more = await store.createTasks(run.id, [{ input: 'c', split: 'train' }]);
    expect(more[0].index).toBe(2);
    const all = (await store.listTasks(run.id)).map((t) => Task.parse(t));
    expect(all.map((t) => [t.index, t.split, t.input])).toEqual([
      [0, 'train', { q: 'a' }],
      [1, 'validation', { q: 'b' }],
      [2, 'train', 'c'],
    ]);
    expect((await store.listTasks(run.id, 'validation')).map((t) => t.index)).toEqual([1]);
    expect(await storeError(store.createTasks('run_nope', []))).toMatchObject({
      code: 'not_found',
      field: 'run_id',
    });
  });

  it('creates groups, pages them newest first and sets their status', async () => {
    const { store } = await fresh();
    const { run, task } = await runWithGroup(store);
    for (let i = 1; i < 5; i++) await store.createGroup({ run_id: run.id, task_id: null, step: i, size: 4 });
    const p1 = await store.listGroups(run.id, { limit: 3 });
    const p2 = await store.listGroups(run.id, { limit: 3, cursor: p1.next_cursor! });
    expect([...p1.items, ...p2.items].map((g) => Group.parse(g).step)).toEqual([4, 3, 2, 1, 0]);
    expect(p2.next_cursor).toBeNull();
    const g = p2.items[1];
    expect(g).toMatchObject({ task_id: task.id, status: 'pending', size: 2 });
    await store.setGroupStatus(g.id, 'complete');
    expect((await store.getGroup(g.id))?.status).toBe('complete');
    // dynamic sampling's groups a step did not train on: no migration, the column takes any status
    await store.setGroupStatus(p1.items[0].id, 'dropped');
    expect(Group.parse(await store.getGroup(p1.items[0].id)).status).toBe('dropped');
    expect(await store.getGroup('grp_nope')).toBeNull();
    expect(await storeError(store.setGroupStatus('grp_nope', 'failed'))).toMatchObject({ code: 'not_found' });
    expect(
      await storeError(store.createGroup({ run_id: run.id, task_id: 'task_nope', step: 0, size: 1 })),
    ).toMatchObject({ code: 'not_found', field: 'task_id' });
    expect(await storeError(store.listGroups('run_nope'))).toMatchObject({ code: 'not_found' });
  });

  it("a group carries its task's input, is announced when made and when its status changes, and a rollout filter keeps the groups holding a match", async () => {
    const { store, events } = await fresh();
    const { run, task, group } = await runWithGroup(store);
    const other = await store.createGroup({ run_id: run.id, task_id: null, step: 1, size: 1 });
    expect(Group.parse(await store.getGroup(group.id)).task_input).toEqual({ question: '1+1' });
    expect((await store.getGroup(other.id))?.task_input).toBeNull();
    await store.setGroupStatus(group.id, 'running');
    const announced = events.flatMap((e) =>
      e.type === 'group' ? [[e.group.id, e.group.status, e.group.task_input]] : [],
    );
    expect(announced).toEqual([
      [group.id, 'pending', { question: '1+1' }],
      [other.id, 'pending', null],
      [group.id, 'running', { question: '1+1' }],
    ]);
    // group: one rollout rewarded 0.75, one failed; other: one queued
    const [good, bad] = await store.createRollouts([
      { kind: 'run', run_id: run.id, group_id: group.id, task_id: task.id },
      { kind: 'run', run_id: run.id, group_id: group.id, task_id: task.id },
    ]);
    await store.createRollouts([{ kind: 'run', run_id: run.id, group_id: other.id }]);
    await store.addReward(good.id, { value: 0.75, source: 'test' });
    await store.completeRollout(good.id);
    await store.failRollout(bad.id, 'broke');
    const ids = async (f: Parameters<Store['listGroups']>[1]) =>
      (await store.listGroups(run.id, f)).items.map((g) => g.id);
    expect(await ids({})).toEqual([other.id, group.id]);
    expect(await ids({ status: 'failed' })).toEqual([group.id]);
    expect(await ids({ status: 'queued' })).toEqual([other.id]);
    expect(await ids({ min_reward: 0.5 })).toEqual([group.id]);
    expect(await ids({ min_reward: 0.8 })).toEqual([]);
    // every bound on the same rollout: the failed one has no reward
    expect(await ids({ status: 'failed', min_reward: 0.5 })).toEqual([]);
    expect(await ids({ status: 'succeeded', min_reward: 0.5, max_reward: 0.75 })).toEqual([group.id]);
    const paged = await store.listGroups(run.id, { status: 'queued', limit: 1 });
    expect(paged.next_cursor).toBeNull();
    expect((await store.listGroups(run.id, { min_reward: 0 })).items[0].task_input).toEqual({
      question: '1+1',
    });
    expect(await storeError(store.listGroups(run.id, { status: 'bogus' as never }))).toMatchObject({
      code: 'invalid',
      field: 'status',
    });
  });

  it('gives each rollout a secret hrk_ key and rejects references to unknown rows', async () => {
    const { store, events } = await fresh();
    const { run, group } = await runWithGroup(store);
    const created = await store.createRollouts([
      { kind: 'run', run_id: run.id, group_id: group.id, input: { q: 1 }, max_attempts: 3 },
      { kind: 'run', run_id: run.id, group_id: group.id },
    ]);
    expect(created).toHaveLength(2);
    const [a, b] = created;
    expect(a.key).toMatch(/^hrk_[A-Za-z0-9_-]{43}$/);
    expect(a.key).not.toBe(b.key);
    // Only the key's SHA-256 is stored; a new key replaces it (a claim hands one out).
    expect(await store.getRolloutKeyHash(a.id)).toBe(keyHash(a.key));
    expect(await store.getRolloutKeyHash('ro_nope')).toBeNull();
    const rows = await (store as SqlStore).driver.all('SELECT * FROM rollouts');
    expect(JSON.stringify(rows)).not.toContain(a.key);
    const issued = await store.issueRolloutKey(a.id);
    expect(issued).toMatch(/^hrk_/);
    expect(issued).not.toBe(a.key);
    expect(await store.getRolloutKeyHash(a.id)).toBe(keyHash(issued ?? ''));
    expect(await store.issueRolloutKey('ro_nope')).toBeNull();
    const got = Rollout.parse(await store.getRollout(a.id));
    expect(got).toMatchObject({
      status: 'queued',
      attempt_count: 0,
      max_attempts: 3,
      reward: null,
      input: { q: 1 },
    });
    expect(got).not.toHaveProperty('key');
    expect((await store.getRollout(b.id))?.max_attempts).toBe(1);
    expect(events.filter((e) => e.type === 'rollout')).toHaveLength(2);

    const standalone = await store.createRollout({ kind: 'standalone', input: 'x' });
    expect(standalone).toMatchObject({ kind: 'standalone', run_id: null, max_attempts: 1 });
    expect(
      await storeError(store.createRollout({ kind: 'run', run_id: run.id, group_id: 'grp_nope' })),
    ).toMatchObject({ code: 'not_found', field: 'group_id' });
    expect(await storeError(store.createRollout({ kind: 'run', max_attempts: 0 }))).toMatchObject({
      code: 'invalid',
      field: 'max_attempts',
    });
    expect(await store.getRollout('ro_nope')).toBeNull();
  });

  it('retries a failed attempt while attempts remain, then fails the rollout', async () => {
    const { store, events } = await fresh();
    const { run, group } = await runWithGroup(store);
    const ro = await store.createRollout({
      kind: 'run',
      run_id: run.id,
      group_id: group.id,
      max_attempts: 1,
      infrastructure_retries: 1,
    });

    const first = await store.claimRollout({ run_id: run.id, worker: 'w1' });
    expect(first).not.toBeNull();
    expect(Attempt.parse(first!.attempt)).toMatchObject({ index: 1, status: 'running', worker: 'w1' });
    expect(Rollout.parse(first!.rollout)).toMatchObject({ id: ro.id, status: 'running', attempt_count: 1 });
    expect(first!.rollout.started_at).not.toBeNull();
    expect(await store.claimRollout({ run_id: run.id })).toBeNull();

    const requeued = await store.finishAttempt(first!.attempt.id, 'timed_out', 'no answer in 600 s');
    expect(requeued).toMatchObject({ status: 'queued', attempt_count: 1, error: 'no answer in 600 s' });
    expect(requeued.finished_at).toBeNull();

    const second = await store.claimRollout({ worker: 'w2' });
    expect(second!.attempt.index).toBe(2);
    await store.heartbeat(second!.attempt.id);
    const failed = await store.finishAttempt(second!.attempt.id, 'failed', 'harness crashed');
    expect(failed).toMatchObject({ status: 'failed', attempt_count: 2, error: 'harness crashed' });
    expect(failed.finished_at).not.toBeNull();
    expect(await store.claimRollout({})).toBeNull();

    const attempts = (await store.listAttempts(ro.id)).map((a) => Attempt.parse(a));
    expect(attempts.map((a) => [a.index, a.status, a.worker, a.error])).toEqual([
      [1, 'timed_out', 'w1', 'no answer in 600 s'],
      [2, 'failed', 'w2', 'harness crashed'],
    ]);
    expect(attempts.every((a) => a.finished_at !== null)).toBe(true);
    // queued, running, queued, running, failed
    expect(
      events.flatMap((e) => (e.type === 'rollout' && e.rollout.id === ro.id ? [e.rollout.status] : [])),
    ).toEqual(['queued', 'running', 'queued', 'running', 'failed']);

    expect(await storeError(store.finishAttempt(second!.attempt.id, 'succeeded'))).toMatchObject({
      code: 'conflict',
    });
    expect(await storeError(store.heartbeat(second!.attempt.id))).toMatchObject({ code: 'conflict' });
    expect(await storeError(store.heartbeat('att_nope'))).toMatchObject({
      code: 'not_found',
      field: 'attempt_id',
    });
    expect(await storeError(store.finishAttempt('att_nope', 'failed'))).toMatchObject({ code: 'not_found' });
    expect(await storeError(store.listAttempts('ro_nope'))).toMatchObject({ code: 'not_found' });
  });

  it('retries infrastructure failures on their own budget, keeps why each attempt failed, and never takes a reward given after a backend error', async () => {
    const { store } = await fresh();
    const { run, group } = await runWithGroup(store);
    const ro = await store.createRollout({
      kind: 'run',
      run_id: run.id,
      group_id: group.id,
      max_attempts: 1,
      infrastructure_retries: 2,
    });
    expect(Rollout.parse(ro)).toMatchObject({ infrastructure_retries: 2, failure: null });
    // A lost worker and a sandbox that did not start use the infrastructure budget, not max_attempts.
    const a1 = (await store.claimRollout({ run_id: run.id }))!.attempt;
    expect(await store.finishAttempt(a1.id, 'unresponsive', 'no heartbeat for 30s')).toMatchObject({
      status: 'queued',
      failure: { kind: 'infrastructure', reason: 'worker_lost' },
    });
    const a2 = (await store.claimRollout({ run_id: run.id }))!.attempt;
    const sandbox = { kind: 'infrastructure', reason: 'sandbox_start' } as const;
    expect(await store.finishAttempt(a2.id, 'failed', 'bwrap: cannot mount', sandbox)).toMatchObject({
      status: 'queued',
      failure: sandbox,
    });
    // The harness gave a reward after its last call failed at the backend: infrastructure all the same.
    const a3 = (await store.claimRollout({ run_id: run.id }))!.attempt;
    await store.recordLlmCall(
      newCall({
        rollout_id: ro.id,
        attempt_id: a3.id,
        status: 'error',
        http_status: 502,
        error: 'upstream down',
      }),
    );
    // As the finish route does with a reward the harness printed: stored, then the attempt ends.
    await store.addReward(ro.id, { value: 0, source: 'harness' });
    const lost = await store.finishAttempt(a3.id, 'succeeded');
    expect(lost.reward).toBeNull();
    expect(lost).toMatchObject({
      status: 'failed',
      failure: { kind: 'infrastructure', reason: 'backend_error' },
    });
    expect(lost.error).toContain('HTTP 502');
    expect((await store.listAttempts(ro.id)).map((a) => Attempt.parse(a).failure)).toEqual([
      { kind: 'infrastructure', reason: 'worker_lost' },
      sandbox,
      { kind: 'infrastructure', reason: 'backend_error' },
    ]);

    // A harness failure uses max_attempts; a 4xx (the request's own fault) is not the backend's.
    const other = await store.createRollout({
      kind: 'run',
      run_id: run.id,
      group_id: group.id,
      max_attempts: 1,
    });
    const b1 = (await store.claimRollout({ run_id: run.id }))!.attempt;
    await store.recordLlmCall(
      newCall({
        rollout_id: other.id,
        attempt_id: b1.id,
        status: 'error',
        http_status: 400,
        error: 'too long',
      }),
    );
    expect(await store.finishAttempt(b1.id, 'failed', 'harness exit code 1')).toMatchObject({
      status: 'failed',
      failure: { kind: 'harness', reason: 'error' },
    });
  });

  it('succeeds, cancels and completes rollouts and refuses transitions out of a final state', async () => {
    const { store } = await fresh();
    const { run } = await runWithGroup(store);
    const [a, b, c, d] = await store.createRollouts([
      { kind: 'run', run_id: run.id },
      { kind: 'run', run_id: run.id },
      { kind: 'run', run_id: run.id },
      { kind: 'run', run_id: run.id },
    ]);
    const claimA = await store.claimRollout({ run_id: run.id });
    expect(claimA!.rollout.id).toBe(a.id); // oldest first
    const done = await store.finishAttempt(claimA!.attempt.id, 'succeeded');
    expect(done).toMatchObject({ status: 'succeeded', error: null });

    const cancelled = await store.cancelRollout(b.id); // queued → cancelled
    expect(cancelled.status).toBe('cancelled');
    expect(await storeError(store.startAttempt(b.id))).toMatchObject({ code: 'conflict', field: 'status' });

    const claimC = await store.claimRollout({ run_id: run.id });
    expect(claimC!.rollout.id).toBe(c.id);
    const completed = await store.completeRollout(c.id); // ends its running attempt
    expect(completed.status).toBe('succeeded');
    expect((await store.listAttempts(c.id))[0].status).toBe('succeeded');

    const attemptD = await store.startAttempt(d.id, 'me');
    const failed = await store.failRollout(d.id, 'verifier rejected the output');
    expect(failed).toMatchObject({ status: 'failed', error: 'verifier rejected the output' });
    expect((await store.listAttempts(d.id))[0]).toMatchObject({ id: attemptD.id, status: 'failed' });

    for (const id of [a.id, b.id, c.id, d.id]) {
      expect(await storeError(store.completeRollout(id))).toMatchObject({ code: 'conflict' });
      expect(await storeError(store.cancelRollout(id))).toMatchObject({ code: 'conflict' });
    }
    expect(await storeError(store.completeRollout('ro_nope'))).toMatchObject({
      code: 'not_found',
      field: 'rollout_id',
    });
    expect(await storeError(store.failRollout('ro_nope', 'x'))).toMatchObject({ code: 'not_found' });
    expect(await storeError(store.startAttempt('ro_nope'))).toMatchObject({ code: 'not_found' });
  });

  it('cancelling an attempt cancels its rollout; standalone rollouts are not claimed by workers', async () => {
    const { store } = await fresh();
    const standalone = await store.createRollout({ kind: 'standalone', max_attempts: 3 });
    expect(await store.claimRollout({})).toBeNull();
    const attempt = await store.startAttempt(standalone.id);
    expect(await storeError(store.startAttempt(standalone.id))).toMatchObject({ code: 'conflict' });
    const r = await store.finishAttempt(attempt.id, 'cancelled');
    expect(r.status).toBe('cancelled');
  });

  it('hands each queued rollout to exactly one of many concurrent claimers', async () => {
    const { store } = await fresh();
    const { run } = await runWithGroup(store);
    await store.createRollouts(Array.from({ length: 10 }, () => ({ kind: 'run' as const, run_id: run.id })));
    const claims = await Promise.all(
      Array.from({ length: 16 }, (_, i) => store.claimRollout({ worker: `w${i}` })),
    );
    const won = claims.filter((c) => c !== null);
    expect(won).toHaveLength(10);
    expect(new Set(won.map((c) => c!.rollout.id)).size).toBe(10);
  });

  it('lists attempts whose heartbeat is older than the given age', async () => {
    const { store } = await fresh();
    const ro = await store.createRollout({ kind: 'standalone' });
    const attempt = await store.startAttempt(ro.id);
    expect((await store.listStaleAttempts(60_000)).map((a) => a.id)).toEqual([]);
    // A negative age puts the cut-off in the future: every running attempt is stale.
    expect((await store.listStaleAttempts(-60_000)).map((a) => a.id)).toEqual([attempt.id]);
    await store.finishAttempt(attempt.id, 'unresponsive');
    expect(await store.listStaleAttempts(-60_000)).toEqual([]);
    expect((await store.getRollout(ro.id))?.status).toBe('failed');
  });

  it('pages 250 rollouts newest first without gaps or repeats and filters by group, status and reward', async () => {
    const { store } = await fresh();
    const { run, group } = await runWithGroup(store);
    const other = await store.createGroup({ run_id: run.id, task_id: null, step: 1, size: 50 });
    const created = await store.createRollouts(
      Array.from({ length: 250 }, (_, i) => ({
        kind: 'run' as const,
        run_id: run.id,
        group_id: i < 200 ? group.id : other.id,
      })),
    );
    // Rewards on every 10th rollout: value i/250.
    for (let i = 0; i < 250; i += 10)
      await store.addReward(created[i].id, { value: i / 250, source: 'verifier' });
    for (let i = 0; i < 5; i++) await store.cancelRollout(created[i * 3].id);

    const seen: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const p = await store.listRollouts({ run_id: run.id, limit: 100, cursor });
      p.items.forEach((r) => {
        Rollout.parse(r);
      });
      seen.push(...p.items.map((r) => r.id));
      cursor = p.next_cursor ?? undefined;
      pages++;
    } while (cursor);
    expect(pages).toBe(3);
    expect(seen).toEqual(created.map((r) => r.id).reverse());

    expect((await store.listRollouts({ group_id: other.id, limit: 1000 })).items).toHaveLength(50);
    const cancelled = await store.listRollouts({ run_id: run.id, status: 'cancelled' });
    expect(cancelled.items.map((r) => r.id)).toEqual([12, 9, 6, 3, 0].map((i) => created[i].id));
    const rewarded = await store.listRollouts({ run_id: run.id, has_reward: true, limit: 1000 });
    expect(rewarded.items).toHaveLength(25);
    expect((await store.listRollouts({ run_id: run.id, has_reward: false, limit: 1000 })).items).toHaveLength(
      225,
    );
    const high = await store.listRollouts({ run_id: run.id, min_reward: 0.5, max_reward: 0.7 });
    expect(high.items.map((r) => r.reward)).toEqual([170, 160, 150, 140, 130].map((i) => i / 250));
    const pagedStatus = await store.listRollouts({ run_id: run.id, status: 'queued', limit: 200 });
    expect(pagedStatus.items).toHaveLength(200);
    const rest = await store.listRollouts({
      run_id: run.id,
      status: 'queued',
      cursor: pagedStatus.next_cursor!,
    });
    expect(rest.items).toHaveLength(45);
    expect(rest.next_cursor).toBeNull();
    expect((await store.listRollouts({ run_id: 'run_nope' })).items).toEqual([]);
    expect(await storeError(store.listRollouts({ limit: 0 }))).toMatchObject({
      code: 'invalid',
      field: 'limit',
    });
  });

  it('keeps every reward and shows the latest on the rollout', async () => {
    const { store, events } = await fresh();
    const ro = await store.createRollout({ kind: 'standalone' });
    Reward.parse(await store.addReward(ro.id, { value: 0.25, source: 'harness' }));
    const latest = Reward.parse(
      await store.addReward(ro.id, { value: -1, source: 'human', detail: { note: 'no' } }),
    );
    expect((await store.getRollout(ro.id))?.reward).toBe(-1);
    expect((await store.listRewards(ro.id)).map((r) => [r.value, r.source, r.detail])).toEqual([
      [0.25, 'harness', null],
      [-1, 'human', { note: 'no' }],
    ]);
    expect(
      events.filter((e) => e.type === 'reward').map((e) => (e.type === 'reward' ? e.reward.id : '')),
    ).toContain(latest.id);
    const rolloutEvents = events.filter((e) => e.type === 'rollout');
    expect(rolloutEvents.at(-1)).toMatchObject({ rollout: { reward: -1 } });
    expect(await storeError(store.addReward(ro.id, { value: Number.NaN, source: 'x' }))).toMatchObject({
      code: 'invalid',
      field: 'value',
    });
    expect(await storeError(store.addReward('ro_nope', { value: 1, source: 'x' }))).toMatchObject({
      code: 'not_found',
    });
    expect(await storeError(store.listRewards('ro_nope'))).toMatchObject({ code: 'not_found' });
  });

  it('returns token ids, logprobs and bodies of a call exactly as recorded', async () => {
    const { store } = await fresh();
    const ro = await store.createRollout({ kind: 'standalone' });
    const attempt = await store.startAttempt(ro.id);
    const promptIds = Array.from({ length: 4096 }, (_, i) => (i * 2654435761) % 2 ** 31);
    promptIds[0] = 0;
    promptIds[1] = 2 ** 31 - 1;
    const responseIds = Array.from({ length: 1024 }, (_, i) => i * 151);
    const logprobs = responseIds.map((_, i) => -Math.abs(Math.sin(i + 1)) * 10 ** -(i % 12));
    logprobs[0] = -0;
    logprobs[1] = -5e-324;
    logprobs[2] = -1.7976931348623157e308;
    logprobs[3] = 0;
    const request = {
      model: 'qwen',
      messages: [{ role: 'user', content: 'é ☃ \u0000 "quoted" 𝄞' }],
      z_last: 1,
      a_first: { nested: [1.5, 2, null, true] },
      big: 9007199254740991,
    };
    const recorded = await store.recordLlmCall(
      newCall({
        rollout_id: ro.id,
        attempt_id: attempt.id,
        request,
        backend_request: { prompt: promptIds.slice(0, 4) },
        prompt_ids: promptIds,
        response_ids: responseIds,
        response_logprobs: logprobs,
        bridge: { reused: 120 },
        tags: ['main'],
        stream: true,
      }),
    );
    const got = LlmCall.parse(await store.getLlmCall(recorded.id));
    expect(got.prompt_ids).toEqual(promptIds);
    expect(got.response_ids).toEqual(responseIds);
    expect(got.response_logprobs!.length).toBe(logprobs.length);
    for (let i = 0; i < logprobs.length; i++)
      expect(Object.is(got.response_logprobs![i], logprobs[i])).toBe(true);
    expect(JSON.stringify(got.request)).toBe(JSON.stringify(request)); // key order kept too
    expect(got).toEqual({ ...recorded });
    expect(got).toMatchObject({ stream: true, tags: ['main'], bridge: { reused: 120 }, seq: 0 });

    const textOnly = LlmCall.parse(
      await store.recordLlmCall(
        newCall({
          rollout_id: ro.id,
          prompt_ids: null,
          response_ids: null,
          response_logprobs: null,
          token_source: 'text',
        }),
      ),
    );
    const back = await store.getLlmCall(textOnly.id);
    expect(back).toMatchObject({ prompt_ids: null, response_ids: null, response_logprobs: null, seq: 1 });
    const empty = await store.recordLlmCall(
      newCall({ rollout_id: ro.id, prompt_ids: [], response_ids: [], response_logprobs: [] }),
    );
    expect(await store.getLlmCall(empty.id)).toMatchObject({
      prompt_ids: [],
      response_ids: [],
      response_logprobs: [],
    });
    expect(await store.getLlmCall('call_nope')).toBeNull();
    expect(
      await storeError(store.recordLlmCall(newCall({ rollout_id: ro.id, prompt_ids: [1, -2] }))),
    ).toMatchObject({ code: 'invalid' });
  });

  it("keeps each call's sampling parameters, and the harness's values the run replaced", async () => {
    const { store } = await fresh();
    const ro = await store.createRollout({ kind: 'standalone' });
    const sampling = {
      ...NEUTRAL_SAMPLING,
      seed: 7,
      max_tokens: 512,
      source: 'run' as const,
      overridden: { temperature: 0.6, top_k: 20 },
    };
    const single = await store.recordLlmCall(newCall({ rollout_id: ro.id, sampling }));
    const [batched] = await store.recordLlmCalls([
      newCall({ rollout_id: ro.id, sampling: { ...sampling, source: 'request', overridden: null } }),
      newCall({ rollout_id: ro.id }),
    ]);
    expect(LlmCall.parse(await store.getLlmCall(single.id)).sampling).toEqual(sampling);
    expect((await store.getLlmCall(batched.id))?.sampling).toEqual({
      ...sampling,
      source: 'request',
      overridden: null,
    });
    const listed = await store.listLlmCalls(ro.id);
    expect(listed.map((c) => c.sampling?.source ?? null)).toEqual(['run', 'request', null]);
  });

  it("keeps the request fields that constrained a training call's decoding", async () => {
    const { store } = await fresh();
    const ro = await store.createRollout({ kind: 'standalone' });
    const sampling = {
      ...NEUTRAL_SAMPLING,
      seed: null,
      max_tokens: null,
      source: 'run' as const,
      overridden: null,
      constrained: ['logit_bias', 'tool_choice'],
    };
    const single = await store.recordLlmCall(newCall({ rollout_id: ro.id, sampling }));
    await store.recordLlmCalls([
      newCall({ rollout_id: ro.id, sampling: { ...sampling, constrained: ['min_tokens'] } }),
    ]);
    expect(LlmCall.parse(await store.getLlmCall(single.id)).sampling?.constrained).toEqual([
      'logit_bias',
      'tool_choice',
    ]);
    const listed = await store.listLlmCalls(ro.id);
    expect(listed.map((c) => c.sampling?.constrained)).toEqual([
      ['logit_bias', 'tool_choice'],
      ['min_tokens'],
    ]);
  });

  it('numbers calls per rollout, records a batch atomically and announces summaries', async () => {
    const { store, events } = await fresh();
    const [a, b] = await store.createRollouts([{ kind: 'standalone' }, { kind: 'standalone' }]);
    await store.recordLlmCall(newCall({ rollout_id: a.id }));
    const batch = await store.recordLlmCalls([
      newCall({ rollout_id: a.id }),
      newCall({ rollout_id: b.id }),
      newCall({ rollout_id: a.id, status: 'error', error: 'upstream 500', http_status: 500 }),
      newCall({}),
    ]);
    expect(batch.map((c) => c.seq)).toEqual([1, 0, 2, 0]);
    const listed = await store.listLlmCalls(a.id);
    expect(listed.map((c) => c.seq)).toEqual([0, 1, 2]);
    expect(listed[2]).toMatchObject({ status: 'error', error: 'upstream 500', http_status: 500 });
    expect((await store.listLlmCalls(b.id)).map((c) => c.id)).toEqual([batch[1].id]);

    const summaries = events.flatMap((e) => (e.type === 'llm_call' ? [e.call] : []));
    expect(summaries).toHaveLength(5);
    expect(summaries[0]).toMatchObject({ prompt_tokens: 3, response_tokens: 2, rollout_id: a.id });
    for (const s of summaries) {
      for (const bulky of [
        'request',
        'response',
        'backend_request',
        'prompt_ids',
        'response_ids',
        'response_logprobs',
      ]) {
        expect(s).not.toHaveProperty(bulky);
      }
    }

    // One unknown rollout in a batch: nothing of the batch is written or announced.
    const before = events.length;
    const err = await storeError(
      store.recordLlmCalls([newCall({ rollout_id: a.id }), newCall({ rollout_id: 'ro_nope' })]),
    );
    expect(err).toMatchObject({ code: 'not_found', field: 'rollout_id' });
    expect(events.length).toBe(before);
    expect(await store.listLlmCalls(a.id)).toHaveLength(3);
    expect((await store.recordLlmCall(newCall({ rollout_id: a.id }))).seq).toBe(3);
    expect(await storeError(store.listLlmCalls('ro_nope'))).toMatchObject({ code: 'not_found' });
  });

  // PostgreSQL, the shared store, is where writers race; two SQLite stores on one file in one process
  // would block each other's event loop (a daemon opens one, and SQLite write transactions are exclusive).
  it.skipIf(backend.name === 'sqlite')(
    'numbers one rollout’s calls 0, 1, 2, … while two stores record them at once',
    async () => {
      const { store, db } = await fresh();
      const other = await openStore(db.spec, db.dataDir);
      cleanups.push(() => other.close());
      const [a, b] = await store.createRollouts([{ kind: 'standalone' }, { kind: 'standalone' }]);
      // Each writer keeps several statements in flight (PostgreSQL: one per pooled connection), single
      // calls and batches across both rollouts, so the writers race on every number.
      const write = (s: Store, w: number) =>
        Promise.all(
          Array.from({ length: 12 }, (_, i) =>
            i % 3 === 0
              ? s.recordLlmCalls([
                  newCall({ rollout_id: a.id, tags: [`w${w}`] }),
                  newCall({ rollout_id: b.id }),
                  newCall({ rollout_id: a.id, tags: [`w${w}`] }),
                ])
              : s.recordLlmCall(newCall({ rollout_id: a.id, tags: [`w${w}`] })),
          ),
        );
      const written = (await Promise.all([write(store, 0), write(other, 1)])).flat(2);
      expect(written).toHaveLength(2 * (4 * 3 + 8));
      const listed = await store.listLlmCalls(a.id);
      expect(listed.map((c) => c.seq)).toEqual(Array.from({ length: 2 * (4 * 2 + 8) }, (_, i) => i));
      // What each writer was told is what the store holds.
      const seqOf = new Map(listed.map((c) => [c.id, c.seq]));
      for (const c of written.filter((c) => c.rollout_id === a.id)) expect(c.seq).toBe(seqOf.get(c.id));
      expect((await store.listLlmCalls(b.id)).map((c) => c.seq)).toEqual(
        Array.from({ length: 8 }, (_, i) => i),
      );
    },
  );

  it('publishes events only after the change is committed and visible to other connections', async () => {
    const { store, db } = await fresh();
    const observer = await openStore(db.spec, db.dataDir);
    cleanups.push(() => observer.close());
    const seen: Promise<[string, boolean]>[] = [];
    // The observer reads on its own connection a moment later, when the rollout may have moved on:
    // visible means it shows this status or a later one, never an earlier one.
    const order = ['queued', 'running', 'succeeded'];
    store.subscribe((e) => {
      if (e.type === 'rollout') {
        const { id, status } = e.rollout;
        seen.push(
          observer
            .getRollout(id)
            .then((r) => [status, r !== null && order.indexOf(r.status) >= order.indexOf(status)]),
        );
      }
      if (e.type === 'llm_call') {
        seen.push(observer.getLlmCall(e.call.id).then((c) => ['call', c !== null]));
      }
    });
    const ro = await store.createRollout({ kind: 'standalone' });
    const attempt = await store.startAttempt(ro.id);
    await store.recordLlmCall(newCall({ rollout_id: ro.id, attempt_id: attempt.id }));
    await store.finishAttempt(attempt.id, 'succeeded');
    expect(await Promise.all(seen)).toEqual([
      ['queued', true],
      ['running', true],
      ['call', true],
      ['succeeded', true],
    ]);
  });

  it('a subscriber that throws does not break writes, and unsubscribing stops events', async () => {
    const { store } = await fresh();
    const got: string[] = [];
    store.subscribe(() => {
      throw new Error('bad listener');
    });
    const off = store.subscribe((e) => got.push(e.type));
    await store.createRun({ name: 'a', config: {} });
    off();
    await store.createRun({ name: 'b', config: {} });
    expect(got).toEqual(['run']);
    expect((await store.listRuns()).items).toHaveLength(2);
  });

  it('records a session: one active recording whose calls join its rollout until stopped', async () => {
    const { store, events } = await fresh();
    expect(await store.activeRecording()).toBeNull();
    const first = await store.createRecording({ name: 'morning', upstream: { kind: 'anthropic' } });
    expect(Recording.parse(first)).toMatchObject({ status: 'active', stopped_at: null });
    expect(first.key).toMatch(/^hrk_/);
    expect(await store.getRecordingKeyHash(first.id)).toBe(keyHash(first.key));
    expect(await store.getRecordingKeyHash('rec_nope')).toBeNull();
    const rows = await (store as SqlStore).driver.all('SELECT * FROM recordings');
    expect(JSON.stringify(rows)).not.toContain(first.key);
    expect(await store.getRollout(first.rollout_id)).toMatchObject({
      kind: 'recording',
      status: 'running',
      recording_id: first.id,
    });

    const c1 = await store.recordLlmCall(newCall({ recording_id: first.id, tags: ['side'] }));
    const c2 = await store.recordLlmCall(newCall({ recording_id: first.id, rollout_id: first.rollout_id }));
    expect([c1.rollout_id, c1.seq, c2.seq]).toEqual([first.rollout_id, 0, 1]);
    expect((await store.listRecordingCalls(first.id)).map((c) => c.id)).toEqual([c1.id, c2.id]);
    expect((await store.listLlmCalls(first.rollout_id)).map((c) => c.id)).toEqual([c1.id, c2.id]);

    const second = await store.createRecording({ name: 'afternoon', upstream: null });
    expect((await store.activeRecording())?.id).toBe(second.id);
    expect(await store.getRecording(first.id)).toMatchObject({ status: 'stopped' });
    expect((await store.getRollout(first.rollout_id))?.status).toBe('succeeded');

    const stopped = Recording.parse(await store.stopRecording(second.id));
    expect(stopped.stopped_at).not.toBeNull();
    expect(await store.activeRecording()).toBeNull();
    expect((await store.listRecordings()).map((r) => r.id)).toEqual([second.id, first.id]);
    expect(await storeError(store.stopRecording(second.id))).toMatchObject({ code: 'conflict' });
    expect(await storeError(store.stopRecording('rec_nope'))).toMatchObject({ code: 'not_found' });
    expect(await storeError(store.listRecordingCalls('rec_nope'))).toMatchObject({ code: 'not_found' });
    expect(await storeError(store.recordLlmCall(newCall({ recording_id: 'rec_nope' })))).toMatchObject({
      code: 'not_found',
      field: 'recording_id',
    });
    expect(
      events
        .filter((e) => e.type === 'recording')
        .map((e) => (e.type === 'recording' ? e.recording.status : '')),
    ).toEqual(['active', 'stopped', 'active', 'stopped']);
  });

  it('a scoped recording starts beside the active one, stops none and is never the active one', async () => {
    const { store } = await fresh();
    const mine = await store.createRecording({ name: 'mine', upstream: null });
    const proposer = await store.createRecording({ name: 'proposer', upstream: null, scoped: true });
    expect(Recording.parse(proposer)).toMatchObject({ status: 'active', scoped: true });
    expect(await store.getRecording(mine.id)).toMatchObject({ status: 'active', scoped: false });
    expect((await store.activeRecording())?.id).toBe(mine.id);
    expect((await store.activeRecordings()).map((r) => r.id)).toEqual([proposer.id, mine.id]);
    expect(await store.rolloutOfKey(proposer.key)).toBe(proposer.rollout_id);
    // A new (unscoped) recording stops the active one only; stopping the scoped one leaves it.
    const next = await store.createRecording({ name: 'next', upstream: null });
    expect(await store.getRecording(mine.id)).toMatchObject({ status: 'stopped' });
    expect(await store.getRecording(proposer.id)).toMatchObject({ status: 'active' });
    await store.stopRecording(proposer.id);
    expect((await store.activeRecordings()).map((r) => r.id)).toEqual([next.id]);
    expect(
      await storeError(store.createRecording({ name: 'x', upstream: null, scoped: 1 as never })),
    ).toMatchObject({ code: 'invalid', field: 'scoped' });
  });

  it('keeps evaluations and evolutions: created running, patched, paged newest first, 404 naming the id', async () => {
    const { store, events } = await fresh();
    const run = await store.createRun({ name: 'eval', config: {} });
    const spec = { pass_threshold: 1 };
    const base = { run_id: run.id, split: 'train' as const, attempts: 2, seed: 3, spec };
    const a = await store.createEvaluation({ ...base, name: 'a', harness_dir: '/h' });
    const b = await store.createEvaluation({ ...base, name: 'b' });
    expect(a).toMatchObject({ status: 'running', model_version: null, harness_dir: '/h', summary: null });
    expect(await store.getEvaluation(a.id)).toEqual(a);
    expect(await store.evaluationOfRun(run.id)).not.toBeNull();
    const done = await store.updateEvaluation(a.id, { status: 'finished', model_version: 2, tasks: [] });
    expect(await store.getEvaluation(a.id)).toEqual(done);
    expect(done).toMatchObject({ status: 'finished', model_version: 2, tasks: [], error: null, name: 'a' });
    const first = await store.listEvaluations({ limit: 1 });
    expect(first.items.map((e) => e.id)).toEqual([b.id]);
    const second = await store.listEvaluations({ limit: 1, cursor: first.next_cursor! });
    expect(second).toEqual({ items: [done], next_cursor: null });
    expect(await storeError(store.updateEvaluation('ev_nope', { status: 'failed' }))).toMatchObject({
      code: 'not_found',
      field: 'id',
    });
    expect(await storeError(store.updateEvaluation(a.id, { status: 'nope' as never }))).toMatchObject({
      field: 'status',
    });

    const evo = await store.createEvolution({
      name: 'evo',
      harness_dir: '/h',
      config: { x: 1 },
      base_dir: null,
    });
    const interrupted = await store.updateEvolution(evo.id, { status: 'interrupted', error: 'restart' });
    expect(await store.getEvolution(evo.id)).toEqual(interrupted);
    expect((await store.listEvolutions()).items.map((e) => [e.id, e.status])).toEqual([
      [evo.id, 'interrupted'],
    ]);
    expect(await storeError(store.updateEvolution('evo_nope', { status: 'failed' }))).toMatchObject({
      code: 'not_found',
    });
    // Runs share the shapes: a patched run is emitted as it is stored.
    const patched = await store.updateRun(run.id, { status: 'running', model_version: 4 });
    expect(await store.getRun(run.id)).toEqual(patched);
    expect(events.filter((e) => e.type === 'run').at(-1)).toEqual({ type: 'run', run: patched });
    expect(await storeError(store.updateRun('run_nope', { step: 1 }))).toMatchObject({ field: 'run_id' });
  });

  it('keeps model versions per run, refusing duplicates', async () => {
    const { store, events } = await fresh();
    const run = await store.createRun({ name: 'r', config: {} });
    await store.addModelVersion({ run_id: run.id, version: 1, path: '/ckpt/1', metrics: { loss: 1 } });
    await store.addModelVersion({ run_id: run.id, version: 0, path: null, metrics: null });
    await store.addModelVersion({ run_id: null, version: 0, path: 'base', metrics: null });
    expect((await store.listModelVersions(run.id)).map((v) => ModelVersion.parse(v).version)).toEqual([0, 1]);
    expect((await store.listModelVersions(null)).map((v) => v.path)).toEqual(['base']);
    expect(await store.listModelVersions()).toHaveLength(3);
    expect(
      await storeError(store.addModelVersion({ run_id: run.id, version: 1, path: null, metrics: null })),
    ).toMatchObject({ code: 'conflict', field: 'version' });
    expect(
      await storeError(store.addModelVersion({ run_id: null, version: 0, path: null, metrics: null })),
    ).toMatchObject({ code: 'conflict' });
    expect(
      await storeError(store.addModelVersion({ run_id: 'run_nope', version: 0, path: null, metrics: null })),
    ).toMatchObject({ code: 'not_found', field: 'run_id' });
    expect(events.filter((e) => e.type === 'model_version')).toEqual([
      { type: 'model_version', run_id: run.id, version: 1 },
      { type: 'model_version', run_id: run.id, version: 0 },
      { type: 'model_version', run_id: null, version: 0 },
    ]);
  });

  it('upserts nodes by id', async () => {
    const { store, events } = await fresh();
    const node: NodeInfo = {
      id: 'node-a',
      name: 'gpu-a',
      kind: 'inference',
      url: 'ws://10.0.0.2:9000',
      status: 'connecting',
      model_version: null,
      detail: null,
      last_seen_at: new Date().toISOString(),
    };
    await store.upsertNode(node);
    await store.upsertNode({ ...node, status: 'ready', model_version: 3, detail: { gpus: 8 } });
    await store.upsertNode({ ...node, id: 'node-b', kind: 'trainer' });
    const nodes = (await store.listNodes()).map((n) => NodeInfo.parse(n));
    expect(nodes.map((n) => [n.id, n.status, n.model_version])).toEqual([
      ['node-a', 'ready', 3],
      ['node-b', 'connecting', null],
    ]);
    expect(nodes[0].detail).toEqual({ gpus: 8 });
    expect(events.filter((e) => e.type === 'node')).toHaveLength(3);
    expect(await storeError(store.upsertNode({ ...node, kind: 'gpu' as never }))).toMatchObject({
      code: 'invalid',
    });
  });

  it('stores rollout stats and replaces its prefix breaks', async () => {
    const { store, events } = await fresh();
    const ro = await store.createRollout({ kind: 'standalone' });
    const brk = {
      call_index: 2,
      position: 17,
      expected: [1, 2, 3],
      actual: [1, 9],
      expected_text: 'abc',
      actual_text: null,
      class: 'retokenized' as const,
    };
    await store.setRolloutStats(ro.id, { samples: 2, prefix_breaks: 2, mask_tokens: 40, truncations: 0 }, [
      brk,
      { ...brk, call_index: 3, class: 'template' },
    ]);
    expect((await store.getRollout(ro.id))?.stats).toEqual({
      samples: 2,
      prefix_breaks: 2,
      mask_tokens: 40,
      truncations: 0,
    });
    expect((await store.getPrefixBreaks(ro.id)).map((b) => b.call_index)).toEqual([2, 3]);
    await store.setRolloutStats(ro.id, { samples: 1, prefix_breaks: 0, mask_tokens: 0, truncations: 1 }, []);
    expect(await store.getPrefixBreaks(ro.id)).toEqual([]);
    expect(events.filter((e) => e.type === 'rollout').at(-1)).toMatchObject({
      rollout: { stats: { truncations: 1 } },
    });
    expect(
      await storeError(
        store.setRolloutStats(
          'ro_nope',
          { samples: 0, prefix_breaks: 0, mask_tokens: 0, truncations: 0 },
          [],
        ),
      ),
    ).toMatchObject({ code: 'not_found' });
    expect(await storeError(store.getPrefixBreaks('ro_nope'))).toMatchObject({ code: 'not_found' });
  });

  it('upgrades a database created at schema version 1 on open and keeps its data', async () => {
    const db = await backend.fresh();
    cleanups.push(() => db.drop());
    const old = await openStore(db.spec, db.dataDir, { schemaVersion: 1 });
    const run = await old.createRun({ name: 'before upgrade', config: { n: 1 } });
    // Rows as version 1 wrote them: plain keys.
    const ro = { id: 'ro_before_upgrade', key: newKey() };
    const rec = { id: 'rec_before_upgrade', key: newKey() };
    const t = new Date().toISOString();
    const raw = (old as SqlStore).driver;
    await raw.run(
      "INSERT INTO recordings (id, name, status, rollout_id, key, created_at) VALUES (?, 'r', 'stopped', 'ro_x', ?, ?)",
      [rec.id, rec.key, t],
    );
    await raw.run(
      "INSERT INTO rollouts (id, kind, run_id, status, attempt_count, max_attempts, key, created_at, updated_at) VALUES (?, 'run', ?, 'queued', 0, 1, ?, ?, ?)",
      [ro.id, run.id, ro.key, t, t],
    );
    // A call as version 1 wrote it (today's code writes columns that version 1 lacks).
    const call = { id: 'call_before_upgrade' };
    await raw.run(
      "INSERT INTO llm_calls (id, rollout_id, seq, wire_api, stream, request, prompt_ids, token_source, status, tags, created_at) VALUES (?, ?, 0, 'chat', 0, '{}', ?, 'backend', 'ok', '[]', ?)",
      [call.id, ro.id, encodeIds([5, 6, 7]), t],
    );
    const versions = async (s: Store) =>
      (
        await (s as SqlStore).driver.all<{ version: number }>(
          'SELECT version FROM schema_migrations ORDER BY version',
        )
      ).map((r) => Number(r.version));
    expect(await versions(old)).toEqual([1]);
    await old.close();

    const upgraded = await openStore(db.spec, db.dataDir);
    cleanups.push(() => upgraded.close());
    expect(await versions(upgraded)).toEqual(ALL_VERSIONS);
    // Version 4 hashed the keys in place: the old keys still work, and the database holds none.
    expect(await upgraded.getRolloutKeyHash(ro.id)).toBe(keyHash(ro.key));
    expect(await upgraded.getRecordingKeyHash(rec.id)).toBe(keyHash(rec.key));
    const dump = JSON.stringify([
      await (upgraded as SqlStore).driver.all('SELECT * FROM rollouts'),
      await (upgraded as SqlStore).driver.all('SELECT * FROM recordings'),
    ]);
    expect(dump).not.toContain('hrk_');
    const indexSql =
      upgraded.kind === 'sqlite'
        ? "SELECT name FROM sqlite_master WHERE type = 'index' AND name = 'rollouts_run_status'"
        : "SELECT indexname AS name FROM pg_indexes WHERE indexname = 'rollouts_run_status' AND schemaname = current_schema()";
    expect(await (upgraded as SqlStore).driver.all(indexSql)).toHaveLength(1);
    if (upgraded.kind === 'postgres') {
      const storage = await (upgraded as SqlStore).driver.all<{ attstorage: string }>(
        "SELECT attstorage FROM pg_attribute WHERE attrelid = 'llm_calls'::regclass AND attname = 'prompt_ids'",
      );
      expect(storage.map((r) => r.attstorage)).toEqual(['e']);
    }
    expect(await upgraded.getRun(run.id)).toMatchObject({ name: 'before upgrade', config: { n: 1 } });
    // Version 5: runs keep their config's folder.
    const withDir = await upgraded.createRun({ name: 'after upgrade', config: {}, base_dir: '/work/runs' });
    expect(await upgraded.getRun(withDir.id)).toMatchObject({ base_dir: '/work/runs' });
    // Version 6: standalone rollouts and recordings keep their token bridge choice.
    const off = await upgraded.createRollout({ kind: 'standalone', tito: false });
    expect(await upgraded.getRollout(off.id)).toMatchObject({ tito: false });
    expect(await upgraded.getRollout(ro.id)).not.toHaveProperty('tito');
    const offRec = await upgraded.createRecording({
      name: 'off',
      upstream: { kind: 'reference' },
      tito: false,
    });
    expect(await upgraded.getRollout(offRec.rollout_id)).toMatchObject({ kind: 'recording', tito: false });
    expect((await upgraded.getLlmCall(call.id))?.prompt_ids).toEqual([5, 6, 7]);
    // Version 8: calls keep their sampling parameters; older calls have none.
    expect((await upgraded.getLlmCall(call.id))?.sampling).toBeNull();
    expect(
      (await upgraded.listRollouts({ run_id: run.id, status: 'queued' })).items.map((r) => r.id),
    ).toEqual([ro.id]);
    // Opening again applies nothing new.
    await upgraded.close();
    const again = await openStore(db.spec, db.dataDir);
    cleanups.push(() => again.close());
    expect(await versions(again)).toEqual(ALL_VERSIONS);
    expect(await again.getRolloutKeyHash(ro.id)).toBe(keyHash(ro.key));
  });

  it("stores what an agent's call repeats once: the ids and history since the last call, every 16th call whole", async () => {
    const { store, db } = await fresh();
    const ro = await store.createRollout({ kind: 'standalone' });
    const ids = (n: number, seed: number) => Array.from({ length: n }, (_, i) => (i * 7919 + seed) % 151_000);
    let prompt = ids(1000, 1);
    const messages: object[] = [{ role: 'system', content: 'Be careful. '.repeat(200) }];
    const recorded: { prompt: number[]; request: object; tool: string }[] = [];
    const extras = ',"return_token_ids":true,"logprobs":true}';
    for (let t = 0; t < 40; t++) {
      const response = ids(50, t);
      const request = { model: 'm', messages: [...messages], tools: [{ type: 'function', name: 'run' }] };
      const text = JSON.stringify(request);
      const backend = `${text.slice(0, -1)}${extras}`;
      await store.recordLlmCall(
        newCall({
          rollout_id: ro.id,
          prompt_ids: prompt,
          response_ids: response,
          request: new JsonText(text, request),
          backend_request: new JsonText(backend, JSON.parse(backend)),
        }),
      );
      const tool = `result ${t} ☃ "quoted" \\ `.repeat(4 + t);
      recorded.push({ prompt, request, tool });
      prompt = [...prompt, ...response, ...ids(100 + t, 1000 + t)];
      messages.push({ role: 'assistant', content: `step ${t}` }, { role: 'tool', content: tool });
    }
    const raw = (store as SqlStore).driver;
    const rows = await raw.all<{
      seq: number;
      base_call: string | null;
      bytes: number;
      request: string;
      request_rest: string | null;
      backend_request: string | null;
      backend_rest: string | null;
    }>(
      'SELECT seq, base_call, length(prompt_ids) AS bytes, request, request_rest, backend_request, backend_rest FROM llm_calls WHERE rollout_id = ? ORDER BY seq',
      [ro.id],
    );
    expect(rows.filter((r) => r.base_call === null).map((r) => Number(r.seq))).toEqual([0, 16, 32]);
    for (const r of rows) {
      const t = Number(r.seq);
      const linked = r.base_call !== null;
      // A linked call holds what came after the last call's answer: the tool result's ids, and the
      // request's text from where the last one closed its messages on.
      expect(Number(r.bytes)).toBe(4 * (linked ? 100 + t - 1 : recorded[t].prompt.length));
      expect(String(r.request) === 'null').toBe(linked);
      if (linked) {
        expect(r.request_rest?.length).toBeLessThan(400 + JSON.stringify(recorded[t - 1].tool).length);
        expect(r.request_rest).toContain(JSON.stringify(recorded[t - 1].tool));
      }
      // The backend request is its request with the extras appended.
      expect(r.backend_request).toBeNull();
      expect(r.backend_rest).toBe(extras);
    }
    const calls = await store.listLlmCalls(ro.id);
    const expectCall = (c: LlmCall | null | undefined, t: number) => {
      expect(c?.prompt_ids).toEqual(recorded[t].prompt);
      expect(c?.request).toEqual(recorded[t].request);
      expect(c?.backend_request).toEqual({ ...recorded[t].request, return_token_ids: true, logprobs: true });
    };
    calls.forEach(expectCall);
    expectCall(await store.getLlmCall(calls[31].id), 31);
    // Another store on the same database (a restart) has no bases: it reads the chains and stores
    // the next call whole.
    const again = await openStore(db.spec, db.dataDir);
    cleanups.push(() => again.close());
    expectCall(await again.getLlmCall(calls[15].id), 15);
    const next = await again.recordLlmCall(newCall({ rollout_id: ro.id, prompt_ids: prompt }));
    const nextRow = await raw.get<{ base_call: string | null }>(
      'SELECT base_call FROM llm_calls WHERE id = ?',
      [next.id],
    );
    expect(nextRow?.base_call).toBeNull();
    expect((await store.listLlmCalls(ro.id)).map((c) => c.prompt_ids)).toEqual([
      ...recorded.map((r) => r.prompt),
      prompt,
    ]);
  });

  it("reads every call back exactly however its prompt and request repeat its attempt's last call", async () => {
    const { store } = await fresh();
    const idList = (max: number) => fc.array(fc.nat(151_000), { maxLength: max });
    const text = fc.string({ unit: 'binary', minLength: 0, maxLength: 400 });
    const step = fc.record({
      attempt: fc.nat(1),
      // extend: the last prompt, its answer and more; cut: part of them and more; fresh: new ids;
      // failed: a call without token ids. The request's history follows the same way.
      kind: fc.constantFrom('extend', 'extend', 'cut', 'fresh', 'failed'),
      keep: fc.double({ min: 0, max: 1, noNaN: true }),
      more: idList(40),
      said: fc.array(text, { maxLength: 3 }),
      response: fc.option(idList(30), { nil: null }),
      // The backend got the request with extras appended, a body of its own, or nothing.
      backend: fc.constantFrom('extras', 'own', 'none'),
      choices: fc.constantFrom(1, 1, 2),
    });
    const system = 'You are an agent. '.repeat(70);
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 14 }), async (steps) => {
        const ro = await store.createRollout({ kind: 'standalone' });
        const attempts = [null, (await store.startAttempt(ro.id, 'w')).id];
        const last: ({ prompt: number[]; response: number[]; history: string[] } | null)[] = [null, null];
        const expected: Pick<LlmCall, 'prompt_ids' | 'response_ids' | 'request' | 'backend_request'>[] = [];
        for (const s of steps) {
          const before = last[s.attempt];
          const tokens = before ? [...before.prompt, ...before.response] : [];
          let prompt: number[] | null;
          let history: string[];
          if (s.kind === 'fresh' || !before) {
            prompt = [...Array(300).keys(), ...s.more];
            history = [system, ...s.said];
          } else if (s.kind === 'cut') {
            prompt = [...tokens.slice(0, Math.round(s.keep * tokens.length)), ...s.more];
            history = [...before.history.slice(0, Math.round(s.keep * before.history.length)), ...s.said];
          } else {
            prompt = [...tokens, ...s.more];
            history = [...before.history, ...s.said];
          }
          if (s.kind === 'failed') prompt = null;
          const request = { model: 'm', messages: history.map((content) => ({ role: 'user', content })) };
          const raw = JSON.stringify(request);
          const backend =
            s.backend === 'extras'
              ? new JsonText(`${raw.slice(0, -1)},"logprobs":true}`, { ...request, logprobs: true })
              : s.backend === 'own'
                ? { model: 'm', prompt: prompt ?? [] }
                : null;
          const response = prompt ? s.response : null;
          const calls = Array.from({ length: s.choices }, (_, i) =>
            newCall({
              rollout_id: ro.id,
              attempt_id: attempts[s.attempt],
              request: i === 0 ? new JsonText(raw, request) : request,
              backend_request: backend,
              prompt_ids: prompt,
              response_ids: response && [...response, i],
              response_logprobs: response && [...response, i].map(() => -1),
              status: prompt ? 'ok' : 'error',
            }),
          );
          await store.recordLlmCalls(calls);
          for (const c of calls)
            expected.push({
              prompt_ids: c.prompt_ids,
              response_ids: c.response_ids,
              request,
              backend_request: backend instanceof JsonText ? backend.value : backend,
            });
          last[s.attempt] = {
            prompt: prompt ?? [],
            response: calls[calls.length - 1].response_ids ?? [],
            history,
          };
        }
        const pick = (c: LlmCall | null) => ({
          prompt_ids: c?.prompt_ids,
          response_ids: c?.response_ids,
          request: c?.request,
          backend_request: c?.backend_request,
        });
        const listed = await store.listLlmCalls(ro.id);
        expect(listed.map(pick)).toEqual(expected);
        for (const [i, c] of listed.entries())
          expect(pick(await store.getLlmCall(c.id))).toEqual(expected[i]);
      }),
      { numRuns: backend.name === 'sqlite' ? 60 : 25 },
    );
  });

  it('keeps committed data across a close and reopen', async () => {
    const db = await backend.fresh();
    cleanups.push(() => db.drop());
    const s1 = await openStore(db.spec, db.dataDir);
    const run = await s1.createRun({ name: 'persist', config: {} });
    await s1.close();
    const s2 = await openStore(db.spec, db.dataDir);
    cleanups.push(() => s2.close());
    expect((await s2.getRun(run.id))?.name).toBe('persist');
  });

  it("keeps a rollout's reported tool runs in start order, once each, redacted, with an event; an unknown rollout is named", async () => {
    const { store, events } = await fresh();
    const r = await store.createRollout({ kind: 'standalone' });
    const run = (tool: string, at: string, call_id: string | null) => ({
      tool,
      call_id,
      started_at: at,
      duration_ms: 12.5,
      success: true,
      result_bytes: 40,
      error: null,
      source: 'claude_code.tool_result',
      agent: 'claude-code',
      attributes: { command: 'echo sk-abcdefghijklmnopqrstuvwx', nested: { n: 1 } },
    });
    const stored = await store.addToolRuns(r.id, [
      run('Write', '2026-12-07T00:00:02.000Z', 'toolu_2'),
      run('Bash', '2026-12-07T00:00:01.000Z', null),
    ]);
    expect(stored).toHaveLength(2);
    // a retry of the same report (same call id, or same source, tool and start) adds nothing
    expect(await store.addToolRuns(r.id, [run('Write', '2026-12-07T00:00:09.000Z', 'toolu_2')])).toEqual([]);
    expect(await store.addToolRuns(r.id, [run('Bash', '2026-12-07T00:00:01.000Z', null)])).toEqual([]);
    const runs = await store.listToolRuns(r.id);
    expect(runs.map((t) => [t.tool, t.started_at, t.success, t.duration_ms])).toEqual([
      ['Bash', '2026-12-07T00:00:01.000Z', true, 12.5],
      ['Write', '2026-12-07T00:00:02.000Z', true, 12.5],
    ]);
    expect(runs[0].attributes).toEqual({ command: 'echo [redacted]', nested: { n: 1 } });
    expect(events.filter((e) => e.type === 'tool_runs')).toHaveLength(1);
    expect(
      (await storeError(store.addToolRuns('ro_missing', [run('X', '2026-12-07T00:00:00.000Z', null)]))).field,
    ).toBe('rollout_id');
  });
});

describe('openStore', () => {
  it('names the accepted forms for an unknown store spec', async () => {
    await expect(openStore('mysql://x', tmpdir())).rejects.toThrow(/sqlite.*postgres/);
  });
});

describe('sqlite query plans', () => {
  it('serves hot queries from their indexes instead of scanning', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'hrl-store-'));
    const store = (await openStore('sqlite', dataDir)) as SqlStore;
    try {
      const plan = async (sql: string) =>
        (
          await store.driver.all<{ detail: string }>(
            `EXPLAIN QUERY PLAN ${sql}`,
            ['a', 'b', 'c', 1].slice(0, sql.split('?').length - 1),
          )
        )
          .map((r) => r.detail)
          .join('; ');
      // A status-filtered page of a run's rollouts: one index range, no sort, no scan.
      const page = await plan(
        'SELECT id FROM rollouts WHERE run_id = ? AND status = ? AND id < ? ORDER BY id DESC LIMIT ?',
      );
      expect(page).toMatch(/USING (COVERING )?INDEX rollouts_run_status/);
      expect(page).not.toMatch(/TEMP B-TREE|SCAN/);
      // The next seq of a rollout's calls: one index seek.
      const seq = await plan('SELECT seq FROM llm_calls WHERE rollout_id = ? ORDER BY seq DESC LIMIT 1');
      expect(seq).toMatch(/INDEX llm_calls_rollout/);
      expect(seq).not.toMatch(/TEMP B-TREE/);
      // Claiming: the oldest queued rollout of a run.
      const claim = await plan(
        "SELECT id FROM rollouts WHERE status = 'queued' AND kind = 'run' AND run_id = ? ORDER BY id LIMIT 1",
      );
      expect(claim).toMatch(/INDEX rollouts_run_status/);
      expect(claim).not.toMatch(/TEMP B-TREE/);
    } finally {
      await store.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
