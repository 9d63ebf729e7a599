// A rollout's row: its columns, read as a Rollout, locked for a transaction and saved back (rollouts,
// attempts, rewards and recordings all change a rollout this way).
import type { Rollout, RolloutStats } from '../../protocol/entities';
import type { Queryable, Row } from '../driver';
import type { SqlContext } from './context';
import { toFailure } from './failures';
import { iso, isoOrNull, notFound, num, numOrNull, parse, str } from './values';

export const ROLLOUT_COLS =
  'id, kind, run_id, group_id, task_id, recording_id, input, status, attempt_count, max_attempts, reward, error, stats, created_at, updated_at, started_at, finished_at, tito, failure_kind, failure_reason, infrastructure_retries';

export function toRollout(r: Row): Rollout {
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
