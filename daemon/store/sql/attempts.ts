// A rollout's attempts: claimed or started, kept alive by heartbeats, finished (retried or not).
import { type Attempt, AttemptStatus, type Rollout } from '../../protocol/entities';
import { type AttemptFailure, defaultFailure } from '../../protocol/failures';
import type { Queryable, Row } from '../driver';
import { newId } from '../ids';
import { StoreError } from '../store';
import type { Emit, SqlContext } from './context';
import { backendVerdict, mayRetry, toFailure } from './failures';
import { lockRollout, ROLLOUT_COLS, saveRollout, toRollout } from './rollout-rows';
import { iso, isoOrNull, notFound, now, num, oneOf, str } from './values';

const FINISHED_ATTEMPT = AttemptStatus.options.filter((status) => status !== 'running');

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
