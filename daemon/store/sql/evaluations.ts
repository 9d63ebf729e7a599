// Evaluations: one row each; the per-task results and the summary are JSON, written when it finishes.
// Every write publishes an `evaluation` event (without the per-task rows).
import type { Page } from '../../protocol/entities';
import type { EvalTaskResult, Evaluation, EvaluationSummary } from '../../protocol/evaluation';
import type { Row } from '../driver';
import { newId } from '../ids';
import type { EvaluationPatch, NewEvaluation, StoredEvaluation } from '../store';
import type { SqlContext } from './context';
import { getById, insertSql, newestFirst, patchRow, type Table } from './table';
import { iso, isoOrNull, json, now, num, numOrNull, oneOf, parse, str } from './values';

const STATUSES = ['running', 'finished', 'failed', 'stopped'] as const;

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

const EVALUATIONS: Table<StoredEvaluation> = {
  name: 'evaluations',
  cols: 'id, name, run_id, split, attempts, harness_dir, model_version, seed, spec, status, error, summary, tasks, created_at, finished_at',
  to: toEvaluation,
  what: 'evaluation',
  idField: 'id',
};
const COLS = EVALUATIONS.cols;

const shown = ({ spec: _s, tasks: _t, ...e }: StoredEvaluation): Omit<Evaluation, 'tasks'> => e;

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
  return c.tx(async (q, emit) => {
    await c.mustExist(q, 'runs', e.run_id, 'run_id', 'run');
    await q.run(insertSql(EVALUATIONS), [
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
    emit({ type: 'evaluation', evaluation: shown(row) });
    return row;
  });
}

export function getEvaluation(c: SqlContext, id: string): Promise<StoredEvaluation | null> {
  return getById(c, EVALUATIONS, id);
}

export async function evaluationOfRun(c: SqlContext, runId: string): Promise<StoredEvaluation | null> {
  const row = await c.read(() => c.db.get(`SELECT ${COLS} FROM evaluations WHERE run_id = ?`, [runId]));
  return row ? toEvaluation(row) : null;
}

/** Newest first. */
export function listEvaluations(
  c: SqlContext,
  p: { cursor?: string; limit?: number } = {},
): Promise<Page<StoredEvaluation>> {
  return newestFirst(c, EVALUATIONS, p);
}

export async function updateEvaluation(
  c: SqlContext,
  id: string,
  patch: EvaluationPatch,
): Promise<StoredEvaluation> {
  if (patch.status !== undefined) oneOf('status', patch.status, STATUSES);
  return c.tx(async (q, emit) => {
    const next = await patchRow(c, q, EVALUATIONS, id, (e) => ({ ...e, ...patch }), {
      status: (e) => e.status,
      error: (e) => e.error,
      model_version: (e) => e.model_version,
      summary: (e) => json(e.summary),
      tasks: (e) => json(e.tasks),
      finished_at: (e) => e.finished_at,
    });
    emit({ type: 'evaluation', evaluation: shown(next) });
    return next;
  });
}
