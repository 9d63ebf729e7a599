// Model versions: one row per checkpoint a run (or the run-less engine) produced.
import type { ModelVersion } from '../../protocol/entities';
import type { Row } from '../driver';
import { newId } from '../ids';
import { StoreError } from '../store';
import type { SqlContext } from './context';
import { iso, json, nonNegativeInt, now, num, parse, str } from './values';

const MODEL_VERSION_COLS = 'run_id, version, path, metrics, created_at';
function toModelVersion(r: Row): ModelVersion {
  return {
    run_id: str(r.run_id),
    version: num(r.version),
    path: str(r.path),
    metrics: parse(r.metrics),
    created_at: iso(r.created_at),
  };
}

export async function addModelVersion(
  c: SqlContext,
  v: Omit<ModelVersion, 'created_at'>,
): Promise<ModelVersion> {
  nonNegativeInt('version', v.version);
  const mv: ModelVersion = {
    run_id: v.run_id ?? null,
    version: v.version,
    path: v.path ?? null,
    metrics: v.metrics ?? null,
    created_at: now(),
  };
  return c.tx(async (q, emit) => {
    if (mv.run_id !== null) await c.mustExist(q, 'runs', mv.run_id, 'run_id', 'run');
    const dup = await q.get(
      "SELECT 1 AS x FROM model_versions WHERE COALESCE(run_id, '') = ? AND version = ?",
      [mv.run_id ?? '', mv.version],
    );
    if (dup) throw new StoreError('conflict', `model version ${mv.version} already exists`, 'version');
    await q.run(`INSERT INTO model_versions (id, ${MODEL_VERSION_COLS}) VALUES (?, ?, ?, ?, ?, ?)`, [
      newId('mv'),
      mv.run_id,
      mv.version,
      mv.path,
      json(mv.metrics),
      mv.created_at,
    ]);
    emit({ type: 'model_version', run_id: mv.run_id, version: mv.version });
    return mv;
  });
}

/** All versions (undefined), the run-less ones (null), or one run's; ordered by version. */
export async function listModelVersions(c: SqlContext, runId?: string | null): Promise<ModelVersion[]> {
  const rows = await c.read(() =>
    runId === undefined
      ? c.db.all(`SELECT ${MODEL_VERSION_COLS} FROM model_versions ORDER BY run_id, version`)
      : runId === null
        ? c.db.all(`SELECT ${MODEL_VERSION_COLS} FROM model_versions WHERE run_id IS NULL ORDER BY version`)
        : c.db.all(`SELECT ${MODEL_VERSION_COLS} FROM model_versions WHERE run_id = ? ORDER BY version`, [
            runId,
          ]),
  );
  return rows.map(toModelVersion);
}
