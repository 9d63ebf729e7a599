// The row shapes several tables share (runs, evaluations, evolutions): a row read into its entity,
// newest-first keyset pages by id, an INSERT of the column list, and a row locked, merged with a
// patch and written back in its transaction.
import type { Page } from '../../protocol/entities';
import type { Param, Queryable, Row } from '../driver';
import type { SqlContext } from './context';
import { notFound, page, pageLimit } from './values';

export interface Table<T> {
  name: string;
  /** The columns `to` reads, comma-separated, in INSERT order. */
  cols: string;
  to: (row: Row) => T;
  /** The entity's name and the id's field, as a 404 names them. */
  what: string;
  idField: string;
}

/** `INSERT INTO <table> (<cols>) VALUES (?, …)`. */
export const insertSql = (t: Table<unknown>) =>
  `INSERT INTO ${t.name} (${t.cols}) VALUES (${t.cols
    .split(',')
    .map(() => '?')
    .join(', ')})`;

export async function getById<T>(c: SqlContext, t: Table<T>, id: string): Promise<T | null> {
  const row = await c.read(() => c.db.get(`SELECT ${t.cols} FROM ${t.name} WHERE id = ?`, [id]));
  return row ? t.to(row) : null;
}

/** Newest first (ids grow with time), `limit` a page, the cursor the last id of the page before. */
export async function newestFirst<T extends { id: string }>(
  c: SqlContext,
  t: Table<T>,
  p: { cursor?: string; limit?: number } = {},
  equal: Record<string, Param> = {},
): Promise<Page<T>> {
  const limit = pageLimit(p.limit);
  const where: [string, Param][] = Object.entries(equal).map(([col, v]) => [`${col} = ?`, v]);
  if (p.cursor) where.push(['id < ?', p.cursor]);
  const sql = `SELECT ${t.cols} FROM ${t.name}${where.length ? ` WHERE ${where.map(([w]) => w).join(' AND ')}` : ''} ORDER BY id DESC LIMIT ?`;
  const rows = await c.read(() => c.db.all(sql, [...where.map(([, v]) => v), limit + 1]));
  return page(rows.map(t.to), limit);
}

/**
 * Row `id` locked (404 when absent), `merge` applied to it, and the columns `write` names set from the
 * result; resolves to the merged entity. Runs in the caller's transaction `q`.
 */
export async function patchRow<T>(
  c: SqlContext,
  q: Queryable,
  t: Table<T>,
  id: string,
  merge: (current: T) => T,
  write: Record<string, (next: T) => Param>,
): Promise<T> {
  const row = await q.get(`SELECT ${t.cols} FROM ${t.name} WHERE id = ?${c.db.forUpdate}`, [id]);
  if (!row) notFound(t.idField, t.what, id);
  const next = merge(t.to(row));
  const cols = Object.keys(write);
  await q.run(`UPDATE ${t.name} SET ${cols.map((col) => `${col} = ?`).join(', ')} WHERE id = ?`, [
    ...cols.map((col) => write[col]!(next)),
    id,
  ]);
  return next;
}
