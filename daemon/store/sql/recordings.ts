// Recording sessions: at most one active (unscoped proxy calls record into it), any number of scoped
// ones beside it (recorded by their key only); each collects its calls in a rollout of kind "recording".
import type { Recording, Rollout } from '../../protocol/entities';
import type { Queryable, Row } from '../driver';
import { keyHash, newId, newKey } from '../ids';
import { type NewImportedRecording, type NewRecording, StoreError } from '../store';
import { endRunningAttempts } from './attempts';
import type { Emit, SqlContext } from './context';
import { lockRollout, saveRollout } from './rollout-rows';
import { invalid, iso, isoOrNull, json, notFound, now, parse } from './values';

const RECORDING_COLS = 'id, name, status, upstream, rollout_id, scoped, created_at, stopped_at';
function toRecording(r: Row): Recording {
  return {
    id: String(r.id),
    name: String(r.name),
    status: r.status as Recording['status'],
    upstream: parse(r.upstream),
    rollout_id: String(r.rollout_id),
    scoped: Number(r.scoped) === 1,
    created_at: iso(r.created_at),
    stopped_at: isoOrNull(r.stopped_at),
  };
}

async function stopRecordingIn(c: SqlContext, q: Queryable, rec: Recording, emit: Emit): Promise<Recording> {
  const t = now();
  const stopped: Recording = { ...rec, status: 'stopped', stopped_at: t };
  await q.run("UPDATE recordings SET status = 'stopped', stopped_at = ? WHERE id = ?", [t, rec.id]);
  const rollout = await lockRollout(c, q, rec.rollout_id);
  if (rollout.status === 'running' || rollout.status === 'queued') {
    await endRunningAttempts(q, rollout.id, 'succeeded', null);
    const next: Rollout = { ...rollout, status: 'succeeded', updated_at: t, finished_at: t };
    await saveRollout(q, next);
    emit({ type: 'rollout', rollout: next });
  }
  emit({ type: 'recording', recording: stopped });
  return stopped;
}

/** Inserts a recording and the running rollout (kind "recording") that collects its calls. */
async function insertRecording(
  q: Queryable,
  recording: Recording,
  t: string,
  opts: { key: string; importKey?: string; input: Rollout['input']; tito?: boolean },
): Promise<Rollout> {
  const imported = opts.importKey === undefined ? [] : [opts.importKey];
  await q.run(
    `INSERT INTO recordings (${RECORDING_COLS}, key_sha256${imported.length ? ', import_key' : ''}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?${imported.length ? ', ?' : ''})`,
    [
      recording.id,
      recording.name,
      recording.status,
      json(recording.upstream),
      recording.rollout_id,
      Number(recording.scoped),
      recording.created_at,
      recording.stopped_at,
      keyHash(opts.key),
      ...imported,
    ],
  );
  const { input, tito } = opts;
  const rollout: Rollout = {
    id: recording.rollout_id,
    kind: 'recording',
    run_id: null,
    group_id: null,
    task_id: null,
    recording_id: recording.id,
    input,
    status: 'running',
    attempt_count: 0,
    max_attempts: 1,
    reward: null,
    error: null,
    stats: null,
    created_at: recording.created_at,
    updated_at: t,
    started_at: recording.created_at,
    finished_at: null,
    ...(tito === undefined ? {} : { tito }),
  };
  // tito only when given (a store opened at an older schema version has no such column)
  const titoCol = tito === undefined ? [] : [Number(tito)];
  await q.run(
    `INSERT INTO rollouts (id, kind, recording_id, input, status, attempt_count, max_attempts, key_sha256, created_at, updated_at, started_at${titoCol.length ? ', tito' : ''}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?${titoCol.length ? ', ?' : ''})`,
    [
      rollout.id,
      rollout.kind,
      recording.id,
      json(rollout.input),
      rollout.status,
      0,
      1,
      keyHash(newKey()),
      rollout.created_at,
      t,
      rollout.started_at,
      ...titoCol,
    ],
  );
  return rollout;
}

/**
 * Starts a recording session and the rollout (kind "recording", running) that collects its calls.
 * Only one recording is active: an active one is stopped first. A scoped one stops none and is never
 * "the" active one: only calls that present its key go into it.
 */
export async function createRecording(
  c: SqlContext,
  input: NewRecording,
): Promise<Recording & { key: string }> {
  if (typeof input.name !== 'string') invalid('name', 'name must be a string');
  if (input.tito !== undefined && typeof input.tito !== 'boolean') invalid('tito', 'tito must be a boolean');
  if (input.scoped !== undefined && typeof input.scoped !== 'boolean')
    invalid('scoped', 'scoped must be a boolean');
  const scoped = input.scoped === true;
  return c.tx(async (q, emit) => {
    if (!scoped) {
      // Two daemons sharing a PostgreSQL store must not both start "the" active recording.
      if (c.db.dialect === 'postgres') await q.get('SELECT pg_advisory_xact_lock(727275)');
      const active = await q.all(
        `SELECT ${RECORDING_COLS} FROM recordings WHERE status = 'active' AND scoped = 0${c.db.forUpdate}`,
      );
      for (const row of active) await stopRecordingIn(c, q, toRecording(row), emit);
    }
    const t = now();
    const recording: Recording = {
      id: newId('rec'),
      name: input.name,
      status: 'active',
      upstream: input.upstream ?? null,
      rollout_id: newId('ro'),
      scoped,
      created_at: t,
      stopped_at: null,
    };
    const key = newKey();
    const rollout = await insertRecording(q, recording, t, {
      key,
      input: { recording: recording.name },
      tito: input.tito,
    });
    emit({ type: 'recording', recording });
    emit({ type: 'rollout', rollout });
    return { ...recording, key };
  });
}

export async function getRecording(c: SqlContext, id: string): Promise<Recording | null> {
  const row = await c.read(() => c.db.get(`SELECT ${RECORDING_COLS} FROM recordings WHERE id = ?`, [id]));
  return row ? toRecording(row) : null;
}

export async function getRecordingKeyHash(c: SqlContext, id: string): Promise<string | null> {
  const row = await c.read(() =>
    c.db.get<{ key_sha256: string }>('SELECT key_sha256 FROM recordings WHERE id = ?', [id]),
  );
  return row ? String(row.key_sha256) : null;
}

export async function activeRecording(c: SqlContext): Promise<Recording | null> {
  const row = await c.read(() =>
    c.db.get(
      `SELECT ${RECORDING_COLS} FROM recordings WHERE status = 'active' AND scoped = 0 ORDER BY id DESC LIMIT 1`,
    ),
  );
  return row ? toRecording(row) : null;
}

/** Newest first, scoped ones included. */
export async function activeRecordings(c: SqlContext): Promise<Recording[]> {
  const rows = await c.read(() =>
    c.db.all(`SELECT ${RECORDING_COLS} FROM recordings WHERE status = 'active' ORDER BY id DESC`),
  );
  return rows.map(toRecording);
}

/** Newest first. */
export async function listRecordings(c: SqlContext): Promise<Recording[]> {
  const rows = await c.read(() => c.db.all(`SELECT ${RECORDING_COLS} FROM recordings ORDER BY id DESC`));
  return rows.map(toRecording);
}

export async function stopRecording(c: SqlContext, id: string): Promise<Recording> {
  return c.tx(async (q, emit) => {
    const row = await q.get(`SELECT ${RECORDING_COLS} FROM recordings WHERE id = ?${c.db.forUpdate}`, [id]);
    if (!row) notFound('recording_id', 'recording', id);
    const rec = toRecording(row);
    if (rec.status !== 'active')
      throw new StoreError('conflict', `recording ${id} is already stopped`, 'status');
    return stopRecordingIn(c, q, rec, emit);
  });
}

/**
 * A recording of a past session (daemon/import/), stopped from the start, with its rollout running
 * until the import completes it. A session imported before (same `import_key`) whose rollout succeeded
 * is returned as it is (`created: false`); one whose import did not finish (its rollout failed, or
 * still runs after a crash: the caller knows no import of it is under way) gives up its key, its
 * rollout failed, and the session is imported anew.
 */
export async function createImportedRecording(
  c: SqlContext,
  input: NewImportedRecording,
): Promise<{ recording: Recording; created: boolean }> {
  if (typeof input.import_key !== 'string' || !input.import_key)
    invalid('import_key', 'import_key is required');
  return c.tx(async (q, emit) => {
    const row = await q.get(
      `SELECT ${RECORDING_COLS} FROM recordings WHERE import_key = ?${c.db.forUpdate}`,
      [input.import_key],
    );
    if (row) {
      const old = toRecording(row);
      const rollout = await lockRollout(c, q, old.rollout_id);
      if (rollout.status === 'succeeded') return { recording: old, created: false };
      await q.run('UPDATE recordings SET import_key = NULL WHERE id = ?', [old.id]);
      if (rollout.status === 'running') {
        const t = now();
        const failed: Rollout = {
          ...rollout,
          status: 'failed',
          error: 'the import stopped before it finished; the session was imported again',
          updated_at: t,
          finished_at: t,
        };
        await saveRollout(q, failed);
        emit({ type: 'rollout', rollout: failed });
      }
    }
    const t = now();
    const recording: Recording = {
      id: newId('rec'),
      name: input.name,
      status: 'stopped',
      upstream: input.upstream ?? null,
      rollout_id: newId('ro'),
      scoped: false,
      created_at: input.created_at ?? t,
      stopped_at: input.stopped_at ?? t,
    };
    const rollout = await insertRecording(q, recording, t, {
      key: newKey(),
      importKey: input.import_key,
      input: { recording: recording.name, import: input.upstream ?? null },
    });
    emit({ type: 'recording', recording });
    emit({ type: 'rollout', rollout });
    return { recording, created: true };
  });
}
