// Evaluations: one row each; the per-task results and the summary are JSON, written when it finishes.
import type { Page } from '../../protocol/entities';
import type { EvalTaskResult, Evaluation, EvaluationSummary } from '../../protocol/evaluation';
import type { Row } from '../driver';
import { newId } from '../ids';
import type { EvaluationPatch, NewEvaluation, StoredEvaluation } from '../store';
import type { SqlContext } from './context';
import {
  iso,
  isoOrNull,
  json,
  newestFirst,
  notFound,
  now,
  num,
  numOrNull,
  oneOf,
  parse,
  str,
} from './values';

const STATUSES = ['running', 'finished', 'failed', 'stopped'] as const;
const COLS =
  'id, name, run_id, split, attempts, harness_dir, model_version, seed, spec, status, error, summary, tasks, created_at, finished_at';

function toEvaluation(r: Row): StoredEvaluation {
  return {
    id: String(r.id),
    name: String(r.name),
    run_id: String(r.run_id),
    split: String(r.split) as Evaluation['split'],
    attempts: num(r.attempts),
    harness_dir: str(r.harness_dir),
    model_version: numOrNull(r.model_version),
    seed: num(r.seed),
    spec: (parse(r.spec) ?? {}) as Record<string, unknown>,
    status: String(r.status) as Evaluation['status'],
    error: str(r.error),
    summary: parse(r.summary) as EvaluationSummary | null,
    tasks: parse(r.tasks) as EvalTaskResult[] | null,
    created_at: iso(r.created_at),
    finished_at: isoOrNull(r.finished_at),
  };
}

export async function createEvaluation(c: SqlContext, e: NewEvaluation): Promise<StoredEvaluation> {
  oneOf('split', e.split, ['train', 'validation', 'test']);
  const row: StoredEvaluation = {
    id: newId('ev'),
    name: e.name,
    run_id: e.run_id,
    split: e.split,
    attempts: e.attempts,
    harness_dir: e.harness_dir ?? null,
    model_version: null,
    seed: e.seed,
    spec: e.spec,
    status: 'running',
    error: null,
    summary: null,
    tasks: null,
    created_at: now(),
    finished_at: null,
  };
  return c.tx(async (q) => {
    await c.mustExist(q, 'runs', e.run_id, 'run_id', 'run');
    await q.run(`INSERT INTO evaluations (${COLS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, [
      row.id,
      row.name,
      row.run_id,
      row.split,
      row.attempts,
      row.harness_dir,
      row.model_version,
      row.seed,
      json(row.spec),
      row.status,
      null,
      null,
      null,
      row.created_at,
      null,
    ]);
    return row;
  });
}

export async function getEvaluation(c: SqlContext, id: string): Promise<StoredEvaluation | null> {
  const row = await c.read(() => c.db.get(`SELECT ${COLS} FROM evaluations WHERE id = ?`, [id]));
  return row ? toEvaluation(row) : null;
}

export async function evaluationOfRun(c: SqlContext, runId: string): Promise<StoredEvaluation | null> {
  const row = await c.read(() => c.db.get(`SELECT ${COLS} FROM evaluations WHERE run_id = ?`, [runId]));
  return row ? toEvaluation(row) : null;
}

/** Newest first. */
export async function listEvaluations(
  c: SqlContext,
  p: { cursor?: string; limit?: number } = {},
): Promise<Page<StoredEvaluation>> {
  return newestFirst(c, 'evaluations', COLS, p, toEvaluation);
}

export async function updateEvaluation(
  c: SqlContext,
  id: string,
  patch: EvaluationPatch,
): Promise<StoredEvaluation> {
  if (patch.status !== undefined) oneOf('status', patch.status, STATUSES);
  return c.tx(async (q) => {
    const row = await q.get(`SELECT ${COLS} FROM evaluations WHERE id = ?${c.db.forUpdate}`, [id]);
    if (!row) notFound('id', 'evaluation', id);
    const next = { ...toEvaluation(row), ...patch };
    await q.run(
      'UPDATE evaluations SET status = ?, error = ?, model_version = ?, summary = ?, tasks = ?, finished_at = ? WHERE id = ?',
      [
        next.status,
        next.error,
        next.model_version,
        json(next.summary),
        json(next.tasks),
        next.finished_at,
        id,
      ],
    );
    return next;
  });
}
