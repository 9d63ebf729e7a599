// Runs and their per-step metrics.
import { type Page, type Run, RunKind, type RunMetrics, RunStatus } from '../../protocol/entities';
import { StepValidation } from '../../protocol/training';
import type { Row } from '../driver';
import { keyHash, newId, newWorkerKey } from '../ids';
import type { SqlContext } from './context';
import { getById, newestFirst, patchRow, type Table } from './table';
import { invalid, iso, nonNegativeInt, notFound, now, num, oneOf, parse, str } from './values';

const RUN_STATUSES = RunStatus.options;
const RUN_KINDS = RunKind.options;

const RUN_COLS_V1 = 'id, name, status, config, step, model_version, error, created_at, updated_at';
const RUN_COLS = `${RUN_COLS_V1}, base_dir, kind`;
function toRun(r: Row): Run {
  return {
    id: String(r.id),
    name: String(r.name),
    status: r.status as Run['status'],
    kind: (r.kind ?? 'training') as Run['kind'],
    config: parse(r.config),
    step: num(r.step),
    model_version: num(r.model_version),
    error: str(r.error),
    created_at: iso(r.created_at),
    updated_at: iso(r.updated_at),
    ...(r.base_dir === null || r.base_dir === undefined ? {} : { base_dir: String(r.base_dir) }),
  };
}

export async function createRun(
  c: SqlContext,
  input: { name: string; config: unknown; base_dir?: string; kind?: RunKind },
): Promise<Run> {
  if (typeof input.name !== 'string') invalid('name', 'name must be a string');
  if (input.kind !== undefined) oneOf('kind', input.kind, RUN_KINDS);
  if (input.base_dir !== undefined && typeof input.base_dir !== 'string')
    invalid('base_dir', 'base_dir must be a string');
  const t = now();
  const run: Run = {
    id: newId('run'),
    name: input.name,
    status: 'created',
    kind: input.kind ?? 'training',
    config: input.config ?? null,
    step: 0,
    model_version: 0,
    error: null,
    created_at: t,
    updated_at: t,
    ...(input.base_dir === undefined ? {} : { base_dir: input.base_dir }),
  };
  return c.tx(async (q, emit) => {
    const values = [
      run.id,
      run.name,
      run.status,
      JSON.stringify(run.config),
      run.step,
      run.model_version,
      run.error,
      run.created_at,
      run.updated_at,
    ];
    // base_dir and kind only when they differ from the columns' defaults (a store opened at an older
    // schema version has no such columns).
    const extra: [string, string][] = [];
    if (input.base_dir !== undefined) extra.push(['base_dir', input.base_dir]);
    if (run.kind !== 'training') extra.push(['kind', run.kind]);
    const cols = [RUN_COLS_V1, ...extra.map(([col]) => col)].join(', ');
    await q.run(`INSERT INTO runs (${cols}) VALUES (${[...values, ...extra].map(() => '?').join(', ')})`, [
      ...values,
      ...extra.map(([, v]) => v),
    ]);
    emit({ type: 'run', run });
    return run;
  });
}

const RUNS: Table<Run> = { name: 'runs', cols: RUN_COLS, to: toRun, what: 'run', idField: 'run_id' };

export function getRun(c: SqlContext, id: string): Promise<Run | null> {
  return getById(c, RUNS, id);
}

/** Newest first. */
export async function listRuns(
  c: SqlContext,
  p: { cursor?: string; limit?: number; kind?: RunKind } = {},
): Promise<Page<Run>> {
  if (p.kind !== undefined) oneOf('kind', p.kind, RUN_KINDS);
  return newestFirst(c, RUNS, p, p.kind === undefined ? undefined : { kind: p.kind });
}

export async function updateRun(
  c: SqlContext,
  id: string,
  patch: Partial<Pick<Run, 'status' | 'step' | 'model_version' | 'error'>>,
): Promise<Run> {
  if (patch.status !== undefined) oneOf('status', patch.status, RUN_STATUSES);
  if (patch.step !== undefined) nonNegativeInt('step', patch.step);
  if (patch.model_version !== undefined) nonNegativeInt('model_version', patch.model_version);
  return c.tx(async (q, emit) => {
    const next = await patchRow(
      c,
      q,
      RUNS,
      id,
      (run) => ({
        ...run,
        status: patch.status ?? run.status,
        step: patch.step ?? run.step,
        model_version: patch.model_version ?? run.model_version,
        error: patch.error !== undefined ? patch.error : run.error,
        updated_at: now(),
      }),
      {
        status: (r) => r.status,
        step: (r) => r.step,
        model_version: (r) => r.model_version,
        error: (r) => r.error,
        updated_at: (r) => r.updated_at,
      },
    );
    emit({ type: 'run', run: next });
    return next;
  });
}

/** Metrics of one step merge with what the step already has (training, then validation …). */
export async function addRunMetrics(
  c: SqlContext,
  runId: string,
  step: number,
  metrics: Record<string, number | null>,
): Promise<RunMetrics> {
  nonNegativeInt('step', step);
  if (metrics === null || typeof metrics !== 'object') invalid('metrics', 'metrics must be an object');
  for (const [k, v] of Object.entries(metrics)) {
    if (v !== null && typeof v !== 'number') invalid(`metrics.${k}`, `metric ${k} must be a number or null`);
  }
  return c.tx(async (q, emit) => {
    // The run's row lock serializes writers of its metrics (read, merge, write).
    const run = await q.get(`SELECT id FROM runs WHERE id = ?${c.db.forUpdate}`, [runId]);
    if (!run) notFound('run_id', 'run', runId);
    const old = await q.get(
      `SELECT metrics, created_at FROM run_metrics WHERE run_id = ? AND step = ?${c.db.forUpdate}`,
      [runId, step],
    );
    const merged = { ...((parse(old?.metrics) as Record<string, number | null>) ?? {}), ...metrics };
    const row: RunMetrics = {
      run_id: runId,
      step,
      metrics: merged,
      created_at: old ? iso(old.created_at) : now(),
    };
    if (old) {
      await q.run('UPDATE run_metrics SET metrics = ? WHERE run_id = ? AND step = ?', [
        JSON.stringify(merged),
        runId,
        step,
      ]);
    } else {
      await q.run('INSERT INTO run_metrics (run_id, step, metrics, created_at) VALUES (?, ?, ?, ?)', [
        runId,
        step,
        JSON.stringify(merged),
        row.created_at,
      ]);
    }
    emit({ type: 'run_metrics', metrics: row });
    return row;
  });
}

export async function listRunMetrics(c: SqlContext, runId: string): Promise<RunMetrics[]> {
  return c.read(async () => {
    await c.mustExist(c.db, 'runs', runId, 'run_id', 'run');
    const rows = await c.db.all(
      'SELECT run_id, step, metrics, created_at FROM run_metrics WHERE run_id = ? ORDER BY step',
      [runId],
    );
    return rows.map((r) => ({
      run_id: String(r.run_id),
      step: num(r.step),
      metrics: parse(r.metrics) as Record<string, number | null>,
      created_at: iso(r.created_at),
    }));
  });
}

/** A step's train/inference agreement (with its scatter); a second write for the step replaces it. */
export async function setStepValidation(
  c: SqlContext,
  runId: string,
  step: number,
  validation: StepValidation,
): Promise<void> {
  nonNegativeInt('step', step);
  const checked = StepValidation.safeParse(validation);
  if (!checked.success) invalid('validation', `validation: ${checked.error.issues[0]?.message}`);
  await c.tx(async (q) => {
    await c.mustExist(q, 'runs', runId, 'run_id', 'run');
    await q.run(
      'INSERT INTO step_validations (run_id, step, validation) VALUES (?, ?, ?) ' +
        'ON CONFLICT (run_id, step) DO UPDATE SET validation = excluded.validation',
      [runId, step, JSON.stringify(checked.data)],
    );
  });
}

export async function getStepValidation(
  c: SqlContext,
  runId: string,
  step: number,
): Promise<StepValidation | null> {
  const row = await c.read(() =>
    c.db.get('SELECT validation FROM step_validations WHERE run_id = ? AND step = ?', [runId, step]),
  );
  return row ? (parse(row.validation) as StepValidation) : null;
}

export async function issueWorkerKey(c: SqlContext, runId: string): Promise<string | null> {
  const key = newWorkerKey();
  const changed = await c.tx((q) =>
    q.run('UPDATE runs SET worker_key_sha256 = ? WHERE id = ?', [keyHash(key), runId]),
  );
  return changed > 0 ? key : null;
}

export async function runOfWorkerKey(c: SqlContext, hash: string): Promise<string | null> {
  const row = await c.read(() =>
    c.db.get<{ id: string }>('SELECT id FROM runs WHERE worker_key_sha256 = ?', [hash]),
  );
  return row ? String(row.id) : null;
}

export async function revokeWorkerKey(c: SqlContext, runId: string): Promise<void> {
  await c.tx((q) => q.run('UPDATE runs SET worker_key_sha256 = NULL WHERE id = ?', [runId]));
}
