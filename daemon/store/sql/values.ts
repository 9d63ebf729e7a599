// Column value conversions (both drivers' row shapes) and the store's input checks, which throw
// StoreErrors naming the field.
import type { Page } from '../../protocol/entities';
import type { Row } from '../driver';
import { StoreError } from '../store';

const DEFAULT_LIMIT = 100;
const MAX_LIMIT = 1000;

export const now = (): string => new Date().toISOString();
export const iso = (v: unknown): string => (v instanceof Date ? v.toISOString() : String(v));
export const isoOrNull = (v: unknown): string | null => (v == null ? null : iso(v));
export const num = (v: unknown): number => Number(v);
export const numOrNull = (v: unknown): number | null => (v == null ? null : Number(v));
export const str = (v: unknown): string | null => (v == null ? null : String(v));
export const json = (v: unknown): string | null => (v === undefined || v === null ? null : JSON.stringify(v));
export const parse = (v: unknown): unknown => (v == null ? null : JSON.parse(String(v)));

export function invalid(field: string, message: string): never {
  throw new StoreError('invalid', message, field);
}
export function notFound(field: string, what: string, id: string): never {
  throw new StoreError('not_found', `${what} ${id} does not exist`, field);
}
export function oneOf(field: string, value: unknown, allowed: readonly string[]): void {
  if (typeof value !== 'string' || !allowed.includes(value)) {
    invalid(field, `${field} must be one of ${allowed.join(', ')} (got ${JSON.stringify(value)})`);
  }
}
export function nonNegativeInt(field: string, value: unknown): void {
  if (!Number.isInteger(value) || (value as number) < 0)
    invalid(field, `${field} must be a non-negative integer`);
}
export function pageLimit(limit: number | undefined): number {
  if (limit === undefined) return DEFAULT_LIMIT;
  if (!Number.isInteger(limit) || limit < 1) invalid('limit', 'limit must be a positive integer');
  return Math.min(limit, MAX_LIMIT);
}
/** Keyset paging: rows were fetched with limit + 1; the cursor is the last id of this page. */
export function page<T extends { id: string }>(rows: T[], limit: number): Page<T> {
  if (rows.length > limit) {
    const items = rows.slice(0, limit);
    return { items, next_cursor: items[items.length - 1].id };
  }
  return { items: rows, next_cursor: null };
}
