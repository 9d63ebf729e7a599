// Rollouts: created with their keys, listed, ended, and the stats and prefix breaks found when their
// samples were built. Their attempts are in attempts.ts.
import {
  type Page,
  type PrefixBreak,
  type Rollout,
  RolloutKind,
  type RolloutStats,
  RolloutStatus,
} from '../../protocol/entities';
import type { Param, Queryable } from '../driver';
import { keyHash, newId, newKey } from '../ids';
import { type NewRollout, type RolloutFilter, StoreError } from '../store';
import { endRunningAttempts } from './attempts';
import type { SqlContext } from './context';
import { lockRollout, ROLLOUT_COLS, saveRollout, toRollout } from './rollout-rows';
import { invalid, json, nonNegativeInt, now, oneOf, page, pageLimit, parse } from './values';

const ROLLOUT_KINDS = RolloutKind.options;
const ROLLOUT_STATUSES = RolloutStatus.options;

export async function createRollout(c: SqlContext, input: NewRollout): Promise<Rollout & { key: string }> {
  return (await createRollouts(c, [input]))[0];
}

/** A new rollout as stored: its input checked (naming the field), queued, with a fresh key. */
function newRollout(input: NewRollout, i: number, t: string): Rollout & { key: string } {
  oneOf(`rollouts[${i}].kind`, input.kind, ROLLOUT_KINDS);
  const max = input.max_attempts ?? 1;
  if (!Number.isInteger(max) || max < 1) invalid('max_attempts', 'max_attempts must be a positive integer');
  const retries = input.infrastructure_retries ?? 0;
  if (!Number.isInteger(retries) || retries < 0)
    invalid('infrastructure_retries', 'infrastructure_retries must be a nonnegative integer');
  return {
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
}

/** Inserts new rollouts; tito and infrastructure_retries only when some rollout gives them (a store
 * opened at an older schema version has no such columns). */
async function insertRollouts(q: Queryable, created: (Rollout & { key: string })[]): Promise<void> {
  const withTito = created.some((r) => r.tito !== undefined);
  const withRetries = created.some((r) => r.infrastructure_retries !== 0);
  const columns = [
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
    ...(withTito ? ['tito'] : []),
    ...(withRetries ? ['infrastructure_retries'] : []),
  ];
  const rows = created.map((r) => [
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
  ]);
  await q.insertMany('rollouts', columns, rows);
}

export async function createRollouts(
  c: SqlContext,
  inputs: NewRollout[],
): Promise<(Rollout & { key: string })[]> {
  const t = now();
  const created = inputs.map((input, i) => newRollout(input, i, t));
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
    await insertRollouts(q, created);
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
