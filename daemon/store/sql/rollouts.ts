// Rollouts, their attempts and the prefix breaks found when their samples were built.
import {
  type Attempt,
  AttemptStatus,
  type Page,
  type PrefixBreak,
  type Rollout,
  RolloutKind,
  type RolloutStats,
  RolloutStatus,
} from '../../protocol/entities';
import { type AttemptFailure, defaultFailure } from '../../protocol/failures';
import type { Param, Queryable, Row } from '../driver';
import { keyHash, newId, newKey } from '../ids';
import { type NewRollout, type RolloutFilter, StoreError } from '../store';
import type { Emit, SqlContext } from './context';
import { backendVerdict, mayRetry, toFailure } from './failures';
import {
  invalid,
  iso,
  isoOrNull,
  json,
  nonNegativeInt,
  notFound,
  now,
  num,
  numOrNull,
  oneOf,
  page,
  pageLimit,
  parse,
  str,
} from './values';

const ROLLOUT_KINDS = RolloutKind.options;
const ROLLOUT_STATUSES = RolloutStatus.options;
const FINISHED_ATTEMPT = AttemptStatus.options.filter((status) => status !== 'running');

const ROLLOUT_COLS =
  'id, kind, run_id, group_id, task_id, recording_id, input, status, attempt_count, max_attempts, reward, error, stats, created_at, updated_at, started_at, finished_at, tito, failure_kind, failure_reason, infrastructure_retries';

function toRollout(r: Row): Rollout {
  return {
    id: String(r.id),
    kind: r.kind as Rollout['kind'],
    run_id: str(r.run_id),
    group_id: str(r.group_id),
    task_id: str(r.task_id),
    recording_id: str(r.recording_id),
    input: parse(r.input),
    status: r.status as Rollout['status'],
    attempt_count: num(r.attempt_count),
    max_attempts: num(r.max_attempts),
    reward: numOrNull(r.reward),
    error: str(r.error),
    failure: toFailure(r.failure_kind, r.failure_reason),
    infrastructure_retries: num(r.infrastructure_retries ?? 0),
    stats: parse(r.stats) as RolloutStats | null,
    created_at: iso(r.created_at),
    updated_at: iso(r.updated_at),
    started_at: isoOrNull(r.started_at),
    finished_at: isoOrNull(r.finished_at),
    ...(r.tito === null || r.tito === undefined ? {} : { tito: Number(r.tito) === 1 }),
  };
}

const ATTEMPT_COLS =
  'id, rollout_id, idx, status, worker, error, started_at, heartbeat_at, finished_at, failure_kind, failure_reason';
function toAttempt(r: Row): Attempt {
  return {
    id: String(r.id),
    rollout_id: String(r.rollout_id),
    index: num(r.idx),
    status: r.status as AttemptStatus,
    worker: str(r.worker),
    error: str(r.error),
    failure: toFailure(r.failure_kind, r.failure_reason),
    started_at: iso(r.started_at),
    heartbeat_at: iso(r.heartbeat_at),
    finished_at: isoOrNull(r.finished_at),
  };
}

export async function lockRollout(c: SqlContext, q: Queryable, id: string): Promise<Rollout> {
  const row = await q.get(`SELECT ${ROLLOUT_COLS} FROM rollouts WHERE id = ?${c.db.forUpdate}`, [id]);
  if (!row) notFound('rollout_id', 'rollout', id);
  return toRollout(row);
}

export async function saveRollout(q: Queryable, r: Rollout): Promise<void> {
  await q.run(
    'UPDATE rollouts SET status = ?, attempt_count = ?, reward = ?, error = ?, updated_at = ?, started_at = ?, finished_at = ?, failure_kind = ?, failure_reason = ? WHERE id = ?',
    [
      r.status,
      r.attempt_count,
      r.reward,
      r.error,
      r.updated_at,
      r.started_at,
      r.finished_at,
      r.failure?.kind ?? null,
      r.failure?.reason ?? null,
      r.id,
    ],
  );
}

export async function createRollout(c: SqlContext, input: NewRollout): Promise<Rollout & { key: string }> {
  return (await createRollouts(c, [input]))[0];
}

export async function createRollouts(
  c: SqlContext,
  inputs: NewRollout[],
): Promise<(Rollout & { key: string })[]> {
  const t = now();
  const created = inputs.map((input, i) => {
    oneOf(`rollouts[${i}].kind`, input.kind, ROLLOUT_KINDS);
    const max = input.max_attempts ?? 1;
    if (!Number.isInteger(max) || max < 1) invalid('max_attempts', 'max_attempts must be a positive integer');
    const retries = input.infrastructure_retries ?? 0;
    if (!Number.isInteger(retries) || retries < 0)
      invalid('infrastructure_retries', 'infrastructure_retries must be a nonnegative integer');
    const rollout: Rollout & { key: string } = {
      id: newId('ro'),
      kind: input.kind,
      run_id: input.run_id ?? null,
      group_id: input.group_id ?? null,
      task_id: input.task_id ?? null,
      recording_id: input.recording_id ?? null,
      input: input.input ?? null,
      status: 'queued',
      attempt_count: 0,
      max_attempts: max,
      reward: null,
      error: null,
      failure: null,
      infrastructure_retries: retries,
      stats: null,
      created_at: t,
      updated_at: t,
      started_at: null,
      finished_at: null,
      ...(input.tito === null || input.tito === undefined ? {} : { tito: input.tito }),
      key: newKey(),
    };
    return rollout;
  });
  const withTito = created.some((r) => r.tito !== undefined);
  const withRetries = created.some((r) => r.infrastructure_retries !== 0);
  return c.tx(async (q, emit) => {
    // Check each referenced row once (a group's rollouts share them) to name the bad field.
    const refs: [keyof NewRollout, string, string][] = [
      ['run_id', 'runs', 'run'],
      ['group_id', 'rollout_groups', 'group'],
      ['task_id', 'tasks', 'task'],
      ['recording_id', 'recordings', 'recording'],
    ];
    for (const [field, table, what] of refs) {
      const ids = new Set(
        created.map((r) => r[field as keyof Rollout] as string | null).filter((v) => v !== null),
      );
      for (const id of ids) await c.mustExist(q, table, id, field, what);
    }
    await q.insertMany(
      'rollouts',
      [
        'id',
        'kind',
        'run_id',
        'group_id',
        'task_id',
        'recording_id',
        'input',
        'status',
        'attempt_count',
        'max_attempts',
        'key_sha256',
        'created_at',
        'updated_at',
        // only when given (a store opened at an older schema version has no such column)
        ...(withTito ? ['tito'] : []),
        ...(withRetries ? ['infrastructure_retries'] : []),
      ],
      created.map((r) => [
        r.id,
        r.kind,
        r.run_id,
        r.group_id,
        r.task_id,
        r.recording_id,
        json(r.input),
        r.status,
        0,
        r.max_attempts,
        keyHash(r.key),
        r.created_at,
        r.updated_at,
        ...(withTito ? [r.tito === undefined ? null : Number(r.tito)] : []),
        ...(withRetries ? [r.infrastructure_retries ?? 0] : []),
      ]),
    );
    for (const r of created) {
      const { key: _key, ...rollout } = r;
      emit({ type: 'rollout', rollout });
    }
    return created;
  });
}

export async function getRollout(c: SqlContext, id: string): Promise<Rollout | null> {
  const row = await c.read(() => c.db.get(`SELECT ${ROLLOUT_COLS} FROM rollouts WHERE id = ?`, [id]));
  return row ? toRollout(row) : null;
}

export async function getRolloutKeyHash(c: SqlContext, id: string): Promise<string | null> {
  const row = await c.read(() =>
    c.db.get<{ key_sha256: string }>('SELECT key_sha256 FROM rollouts WHERE id = ?', [id]),
  );
  return row ? String(row.key_sha256) : null;
}

export async function issueRolloutKey(c: SqlContext, id: string): Promise<string | null> {
  const key = newKey();
  const changed = await c.tx((q) =>
    q.run('UPDATE rollouts SET key_sha256 = ? WHERE id = ?', [keyHash(key), id]),
  );
  return changed > 0 ? key : null;
}

/** Newest first, keyset-paged by id (the cursor is the last id of the previous page). */
export async function listRollouts(c: SqlContext, filter: RolloutFilter): Promise<Page<Rollout>> {
  const limit = pageLimit(filter.limit);
  const where: string[] = [];
  const params: Param[] = [];
  if (filter.run_id !== undefined) {
    where.push('run_id = ?');
    params.push(filter.run_id);
  }
  if (filter.group_id !== undefined) {
    where.push('group_id = ?');
    params.push(filter.group_id);
  }
  if (filter.status !== undefined) {
    oneOf('status', filter.status, ROLLOUT_STATUSES);
    where.push('status = ?');
    params.push(filter.status);
  }
  if (filter.min_reward !== undefined) {
    if (typeof filter.min_reward !== 'number' || Number.isNaN(filter.min_reward))
      invalid('min_reward', 'min_reward must be a number');
    where.push('reward >= ?');
    params.push(filter.min_reward);
  }
  if (filter.max_reward !== undefined) {
    if (typeof filter.max_reward !== 'number' || Number.isNaN(filter.max_reward))
      invalid('max_reward', 'max_reward must be a number');
    where.push('reward <= ?');
    params.push(filter.max_reward);
  }
  if (filter.has_reward !== undefined)
    where.push(filter.has_reward ? 'reward IS NOT NULL' : 'reward IS NULL');
  if (filter.cursor) {
    where.push('id < ?');
    params.push(filter.cursor);
  }
  params.push(limit + 1);
  const sql = `SELECT ${ROLLOUT_COLS} FROM rollouts${where.length ? ` WHERE ${where.join(' AND ')}` : ''} ORDER BY id DESC LIMIT ?`;
  const rows = await c.read(() => c.db.all(sql, params));
  return page(rows.map(toRollout), limit);
}

async function beginAttempt(q: Queryable, rollout: Rollout, worker: string | null, emit: Emit) {
  const t = now();
  const attempt: Attempt = {
    id: newId('att'),
    rollout_id: rollout.id,
    index: rollout.attempt_count + 1,
    status: 'running',
    worker,
    error: null,
    failure: null,
    started_at: t,
    heartbeat_at: t,
    finished_at: null,
  };
  await q.run(`INSERT INTO attempts (${ATTEMPT_COLS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, [
    attempt.id,
    attempt.rollout_id,
    attempt.index,
    attempt.status,
    attempt.worker,
    attempt.error,
    attempt.started_at,
    attempt.heartbeat_at,
    attempt.finished_at,
    null,
    null,
  ]);
  const next: Rollout = {
    ...rollout,
    status: 'running',
    attempt_count: attempt.index,
    started_at: rollout.started_at ?? t,
    updated_at: t,
  };
  await saveRollout(q, next);
  emit({ type: 'rollout', rollout: next });
  return { rollout: next, attempt };
}

/** Takes the oldest queued rollout of kind "run" (standalone ones are started by their harness). */
export async function claimRollout(c: SqlContext, filter: { run_id?: string; worker?: string } = {}) {
  return c.tx(async (q, emit) => {
    const row = await q.get(
      `SELECT ${ROLLOUT_COLS} FROM rollouts WHERE status = 'queued' AND kind = 'run'${
        filter.run_id !== undefined ? ' AND run_id = ?' : ''
      } ORDER BY id LIMIT 1${c.db.skipLocked}`,
      filter.run_id !== undefined ? [filter.run_id] : [],
    );
    if (!row) return null;
    return beginAttempt(q, toRollout(row), filter.worker ?? null, emit);
  });
}

export async function startAttempt(c: SqlContext, rolloutId: string, worker?: string): Promise<Attempt> {
  return c.tx(async (q, emit) => {
    const rollout = await lockRollout(c, q, rolloutId);
    if (rollout.status !== 'queued') {
      throw new StoreError('conflict', `rollout ${rolloutId} is ${rollout.status}, not queued`, 'status');
    }
    return (await beginAttempt(q, rollout, worker ?? null, emit)).attempt;
  });
}

export async function heartbeat(c: SqlContext, attemptId: string): Promise<void> {
  await c.tx(async (q) => {
    const changed = await q.run("UPDATE attempts SET heartbeat_at = ? WHERE id = ? AND status = 'running'", [
      now(),
      attemptId,
    ]);
    if (changed === 0) {
      const row = await q.get<{ status: string }>('SELECT status FROM attempts WHERE id = ?', [attemptId]);
      if (!row) notFound('attempt_id', 'attempt', attemptId);
      throw new StoreError('conflict', `attempt ${attemptId} is ${row.status}, not running`, 'status');
    }
  });
}

/** Ends the running attempts of a rollout (complete/fail/cancel without attempt bookkeeping). */
export async function endRunningAttempts(
  q: Queryable,
  rolloutId: string,
  status: AttemptStatus,
  error: string | null,
) {
  const t = now();
  await q.run(
    "UPDATE attempts SET status = ?, error = ?, finished_at = ?, heartbeat_at = ? WHERE rollout_id = ? AND status = 'running'",
    [status, error, t, t, rolloutId],
  );
}

export async function finishAttempt(
  c: SqlContext,
  attemptId: string,
  ended: Exclude<AttemptStatus, 'running'>,
  reported?: string,
  named?: AttemptFailure | null,
): Promise<Rollout> {
  oneOf('status', ended, FINISHED_ATTEMPT);
  return c.tx(async (q, emit) => {
    const ref = await q.get<{ rollout_id: string }>('SELECT rollout_id FROM attempts WHERE id = ?', [
      attemptId,
    ]);
    if (!ref) notFound('attempt_id', 'attempt', attemptId);
    // Lock order everywhere: rollout, then its attempts.
    const rollout = await lockRollout(c, q, String(ref.rollout_id));
    const row = await q.get(`SELECT ${ATTEMPT_COLS} FROM attempts WHERE id = ?${c.db.forUpdate}`, [
      attemptId,
    ]);
    const attempt = toAttempt(row!);
    if (attempt.status !== 'running') {
      throw new StoreError('conflict', `attempt ${attemptId} is already ${attempt.status}`, 'status');
    }
    let status = ended;
    let error = reported;
    let failure = status === 'succeeded' || status === 'cancelled' ? null : (named ?? defaultFailure(status));
    const backend =
      status === 'succeeded' || failure?.kind === 'harness'
        ? await backendVerdict(q, rollout, attemptId)
        : null;
    if (backend) {
      status = 'failed';
      failure = backend.failure;
      error = error ? `${backend.error}; the harness: ${error}` : backend.error;
    }
    const t = now();
    await q.run(
      'UPDATE attempts SET status = ?, error = ?, finished_at = ?, heartbeat_at = ?, failure_kind = ?, failure_reason = ? WHERE id = ?',
      [status, error ?? null, t, t, failure?.kind ?? null, failure?.reason ?? null, attemptId],
    );
    const next: Rollout = { ...rollout, updated_at: t };
    if (status === 'succeeded') {
      Object.assign(next, { status: 'succeeded', error: null, failure: null, finished_at: t });
    } else if (status === 'cancelled') {
      Object.assign(next, { status: 'cancelled', error: error ?? rollout.error, finished_at: t });
    } else if (failure && (await mayRetry(q, rollout, failure))) {
      // A failed attempt's reward (one the harness posted, or gave after a backend error) is not the
      // rollout's: the next attempt gives its own.
      Object.assign(next, { status: 'queued', error: error ?? status, failure, reward: null });
    } else {
      Object.assign(next, {
        status: 'failed',
        error: error ?? status,
        failure,
        reward: null,
        finished_at: t,
      });
    }
    await saveRollout(q, next);
    emit({ type: 'rollout', rollout: next });
    return next;
  });
}

async function endRollout(
  c: SqlContext,
  id: string,
  status: 'succeeded' | 'failed' | 'cancelled',
  error: string | null,
): Promise<Rollout> {
  return c.tx(async (q, emit) => {
    const rollout = await lockRollout(c, q, id);
    if (rollout.status !== 'queued' && rollout.status !== 'running') {
      throw new StoreError('conflict', `rollout ${id} is already ${rollout.status}`, 'status');
    }
    await endRunningAttempts(q, id, status, error);
    const t = now();
    const next: Rollout = {
      ...rollout,
      status,
      error: status === 'succeeded' ? null : (error ?? rollout.error),
      updated_at: t,
      finished_at: t,
    };
    await saveRollout(q, next);
    emit({ type: 'rollout', rollout: next });
    return next;
  });
}

export function completeRollout(c: SqlContext, id: string): Promise<Rollout> {
  return endRollout(c, id, 'succeeded', null);
}

export function failRollout(c: SqlContext, id: string, error: string): Promise<Rollout> {
  return endRollout(c, id, 'failed', error);
}

export function cancelRollout(c: SqlContext, id: string): Promise<Rollout> {
  return endRollout(c, id, 'cancelled', null);
}

export async function listStaleAttempts(c: SqlContext, olderThanMs: number): Promise<Attempt[]> {
  const before = new Date(Date.now() - olderThanMs).toISOString();
  const rows = await c.read(() =>
    c.db.all(
      `SELECT ${ATTEMPT_COLS} FROM attempts WHERE status = 'running' AND heartbeat_at < ? ORDER BY heartbeat_at, id`,
      [before],
    ),
  );
  return rows.map(toAttempt);
}

export async function listAttempts(c: SqlContext, rolloutId: string): Promise<Attempt[]> {
  return c.read(async () => {
    await c.mustExist(c.db, 'rollouts', rolloutId, 'rollout_id', 'rollout');
    const rows = await c.db.all(`SELECT ${ATTEMPT_COLS} FROM attempts WHERE rollout_id = ? ORDER BY idx`, [
      rolloutId,
    ]);
    return rows.map(toAttempt);
  });
}

export async function setRolloutStats(
  c: SqlContext,
  id: string,
  stats: RolloutStats,
  prefixBreaks: PrefixBreak[],
): Promise<void> {
  for (const k of ['samples', 'prefix_breaks', 'mask_tokens', 'truncations'] as const) {
    nonNegativeInt(`stats.${k}`, stats?.[k]);
  }
  await c.tx(async (q, emit) => {
    const rollout = await lockRollout(c, q, id);
    const next: Rollout = { ...rollout, stats: { ...stats }, updated_at: now() };
    await q.run('UPDATE rollouts SET stats = ?, updated_at = ? WHERE id = ?', [
      JSON.stringify(next.stats),
      next.updated_at,
      id,
    ]);
    await q.run('DELETE FROM prefix_breaks WHERE rollout_id = ?', [id]);
    await q.insertMany(
      'prefix_breaks',
      ['rollout_id', 'idx', 'data'],
      prefixBreaks.map((b, i) => [id, i, JSON.stringify(b)]),
    );
    emit({ type: 'rollout', rollout: next });
  });
}

export async function getPrefixBreaks(c: SqlContext, id: string): Promise<PrefixBreak[]> {
  return c.read(async () => {
    await c.mustExist(c.db, 'rollouts', id, 'rollout_id', 'rollout');
    const rows = await c.db.all('SELECT data FROM prefix_breaks WHERE rollout_id = ? ORDER BY idx', [id]);
    return rows.map((r) => parse(r.data) as PrefixBreak);
  });
}
