// Why an attempt failed, as the store keeps it (protocol/failures.ts): read from its columns, the
// backend's share in an attempt of a run, and whether the rollout gets another attempt.
import type { Rollout } from '../../protocol/entities';
import {
  type AttemptFailure,
  backendFailed,
  FailureKind,
  FailureReason,
  infrastructure,
} from '../../protocol/failures';
import type { Queryable } from '../driver';
import { num, numOrNull, str } from './values';

export function toFailure(kind: unknown, reason: unknown): AttemptFailure | null {
  const k = FailureKind.safeParse(kind);
  const r = FailureReason.safeParse(reason);
  return k.success && r.success ? { kind: k.data, reason: r.data } : null;
}

/**
 * How an attempt of a training rollout really ended: one whose last llm call failed at the backend
 * failed for the infrastructure's sake, whatever the harness made of it (a reward it gave after the
 * error would train on the outage).
 */
export async function backendVerdict(
  q: Queryable,
  rollout: Rollout,
  attemptId: string,
): Promise<{ failure: AttemptFailure; error: string } | null> {
  if (rollout.kind !== 'run') return null;
  const last = await q.get<{ status: string; http_status: number | null; error: string | null }>(
    'SELECT status, http_status, error FROM llm_calls WHERE rollout_id = ? AND attempt_id = ? ORDER BY seq DESC LIMIT 1',
    [rollout.id, attemptId],
  );
  if (!last) return null;
  const call = { status: String(last.status), http_status: numOrNull(last.http_status) };
  if (!backendFailed(call)) return null;
  const how = call.http_status === null ? 'no answer' : `HTTP ${call.http_status}`;
  return {
    failure: infrastructure('backend_error'),
    error: `the inference backend failed the attempt's last llm call (${how}): ${str(last.error) ?? 'no detail'}`,
  };
}

/**
 * Whether a failed attempt's rollout gets another one: each kind of failure has its own budget, and an
 * infrastructure failure may also take an attempt max_attempts leaves (a rollout made without
 * infrastructure_retries keeps the retry its max_attempts promised; harness failures are counted apart).
 */
export async function mayRetry(q: Queryable, rollout: Rollout, failure: AttemptFailure): Promise<boolean> {
  const row = await q.get<{ n: number }>(
    'SELECT COUNT(*) AS n FROM attempts WHERE rollout_id = ? AND failure_kind = ?',
    [rollout.id, failure.kind],
  );
  const failed = num(row?.n ?? 0);
  return failure.kind === 'infrastructure'
    ? failed <= (rollout.infrastructure_retries ?? 0) || rollout.attempt_count < rollout.max_attempts
    : failed < rollout.max_attempts;
}
