// Evolutions and their candidates: a candidate row keeps its patch against its parent and its other
// fields (verdicts, scores, evaluations) as JSON; (evolution, content hash) is its key. Every write
// publishes an `evolution` or `candidate` event (what a candidate's write changed: changeOf).
import type { Page } from '../../protocol/entities';
import type { Candidate, CandidateChange, Evolution, FilePatch } from '../../protocol/evolution';
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

/** An evolution as its event carries it: without the run config and folder it was stored with. */
const shown = ({ config: _c, base_dir: _b, ...e }: StoredEvolution): Evolution => e;

/** A candidate's write, said in one word (the first that applies). */
function changeOf(before: StoredCandidate | null, after: StoredCandidate): CandidateChange {
  if (!before) return 'added';
  if (before.status !== after.status) return 'status';
  if (before.train_reward !== after.train_reward || before.held_out_reward !== after.held_out_reward)
    return 'scored';
  if (before.selected !== after.selected) return 'selected';
  return 'updated';
}

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
  return c.tx(async (q, emit) => {
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
    emit({ type: 'evolution', evolution: shown(row) });
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
  return c.tx(async (q, emit) => {
    const next = await patchRow(c, q, EVOLUTIONS, id, (e) => ({ ...e, ...patch }), {
      status: (e) => e.status,
      error: (e) => e.error,
      result: (e) => json(e.result),
      finished_at: (e) => e.finished_at,
    });
    emit({ type: 'evolution', evolution: shown(next) });
    return next;
  });
}

/** Insert or replace a candidate (its evolution must exist). */
export async function putCandidate(c: SqlContext, cand: StoredCandidate): Promise<StoredCandidate> {
  const { evolution_id, hash, parent, generation, status, created_at, patch, ...fields } = cand;
  return c.tx(async (q, emit) => {
    await c.mustExist(q, 'evolutions', evolution_id, 'evolution_id', 'evolution');
    const before = await q.get(
      `SELECT ${CANDIDATE_COLS} FROM candidates WHERE evolution_id = ? AND hash = ?`,
      [evolution_id, hash],
    );
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
    const { patch: _p, ...candidate } = cand;
    emit({ type: 'candidate', change: changeOf(before ? toCandidate(before) : null, cand), candidate });
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
