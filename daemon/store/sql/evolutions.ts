// Evolutions and their candidates: a candidate row keeps its patch against its parent and its other
// fields (verdicts, scores, evaluations) as JSON; (evolution, content hash) is its key.
import type { Page } from '../../protocol/entities';
import type { Candidate, Evolution, FilePatch } from '../../protocol/evolution';
import type { Row } from '../driver';
import { newId } from '../ids';
import type { StoredCandidate, StoredEvolution } from '../store';
import type { SqlContext } from './context';
import { getById, insertSql, newestFirst, patchRow, type Table } from './table';
import { iso, isoOrNull, json, now, oneOf, parse, str } from './values';

const EVOLUTION_COLS =
  'id, name, status, error, harness_dir, config, base_dir, result, created_at, finished_at';
const CANDIDATE_COLS = 'evolution_id, hash, parent, generation, status, patch, fields, created_at';
const STATUSES = ['running', 'finished', 'failed', 'stopped', 'interrupted'];

function toEvolution(r: Row): StoredEvolution {
  return {
    id: String(r.id),
    name: String(r.name),
    status: String(r.status) as Evolution['status'],
    error: str(r.error),
    harness_dir: String(r.harness_dir),
    config: parse(r.config),
    base_dir: str(r.base_dir),
    result: parse(r.result) as Evolution['result'],
    created_at: iso(r.created_at),
    finished_at: isoOrNull(r.finished_at),
  };
}

function toCandidate(r: Row): StoredCandidate {
  const fields = parse(r.fields) as Omit<
    Candidate,
    'evolution_id' | 'hash' | 'parent' | 'generation' | 'status' | 'created_at'
  >;
  return {
    ...fields,
    evolution_id: String(r.evolution_id),
    hash: String(r.hash),
    parent: str(r.parent),
    generation: Number(r.generation),
    status: String(r.status) as Candidate['status'],
    created_at: iso(r.created_at),
    patch: parse(r.patch) as FilePatch[],
  };
}

const EVOLUTIONS: Table<StoredEvolution> = {
  name: 'evolutions',
  cols: EVOLUTION_COLS,
  to: toEvolution,
  what: 'evolution',
  idField: 'id',
};

export async function createEvolution(
  c: SqlContext,
  e: { name: string; harness_dir: string; config: unknown; base_dir?: string | null },
): Promise<StoredEvolution> {
  const row: StoredEvolution = {
    id: newId('evo'),
    name: e.name,
    status: 'running',
    error: null,
    harness_dir: e.harness_dir,
    config: e.config,
    base_dir: e.base_dir ?? null,
    result: null,
    created_at: now(),
    finished_at: null,
  };
  return c.tx(async (q) => {
    await q.run(insertSql(EVOLUTIONS), [
      row.id,
      row.name,
      row.status,
      null,
      row.harness_dir,
      json(row.config),
      row.base_dir,
      null,
      row.created_at,
      null,
    ]);
    return row;
  });
}

export function getEvolution(c: SqlContext, id: string): Promise<StoredEvolution | null> {
  return getById(c, EVOLUTIONS, id);
}

export function listEvolutions(
  c: SqlContext,
  p: { cursor?: string; limit?: number } = {},
): Promise<Page<StoredEvolution>> {
  return newestFirst(c, EVOLUTIONS, p);
}

export async function updateEvolution(
  c: SqlContext,
  id: string,
  patch: Partial<Pick<Evolution, 'status' | 'error' | 'result' | 'finished_at'>>,
): Promise<StoredEvolution> {
  if (patch.status !== undefined) oneOf('status', patch.status, STATUSES);
  return c.tx((q) =>
    patchRow(c, q, EVOLUTIONS, id, (e) => ({ ...e, ...patch }), {
      status: (e) => e.status,
      error: (e) => e.error,
      result: (e) => json(e.result),
      finished_at: (e) => e.finished_at,
    }),
  );
}

/** Insert or replace a candidate (its evolution must exist). */
export async function putCandidate(c: SqlContext, cand: StoredCandidate): Promise<StoredCandidate> {
  const { evolution_id, hash, parent, generation, status, created_at, patch, ...fields } = cand;
  return c.tx(async (q) => {
    await c.mustExist(q, 'evolutions', evolution_id, 'evolution_id', 'evolution');
    await q.run('DELETE FROM candidates WHERE evolution_id = ? AND hash = ?', [evolution_id, hash]);
    await q.run(`INSERT INTO candidates (${CANDIDATE_COLS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, [
      evolution_id,
      hash,
      parent,
      generation,
      status,
      json(patch),
      json(fields),
      created_at,
    ]);
    return cand;
  });
}

export async function listCandidates(c: SqlContext, evolutionId: string): Promise<StoredCandidate[]> {
  const rows = await c.read(() =>
    c.db.all(
      `SELECT ${CANDIDATE_COLS} FROM candidates WHERE evolution_id = ? ORDER BY generation, created_at`,
      [evolutionId],
    ),
  );
  return rows.map(toCandidate);
}
