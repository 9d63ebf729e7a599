// What every entity module of the SQL store shares: the driver, one-transaction-with-events, reads
// that map driver errors, and existence checks that name the field.
import type { DaemonEvent } from '../../protocol/events';
import type { Driver, Queryable } from '../driver';
import { StoreError } from '../store';
import { notFound } from './values';

export type Emit = (event: DaemonEvent) => void;

/** Maps constraint violations the checks did not catch (races, other writers) to StoreErrors. */
function mapDriverError(err: unknown): unknown {
  if (err instanceof StoreError || !(err instanceof Error)) return err;
  const code = (err as { code?: string }).code ?? '';
  if (code === '23503' || code === 'SQLITE_CONSTRAINT_FOREIGNKEY') {
    return new StoreError('not_found', `a referenced row does not exist (${err.message})`);
  }
  if (code === '23505' || code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY') {
    return new StoreError('conflict', `already exists (${err.message})`);
  }
  return err;
}

export class SqlContext {
  private readonly listeners = new Set<(event: DaemonEvent) => void>();
  closed = false;

  constructor(readonly db: Driver) {}

  /** Whether anyone listens (events that cost work to build are skipped otherwise). */
  get listening(): boolean {
    return this.listeners.size > 0;
  }

  subscribe(listener: (event: DaemonEvent) => void): () => void {
    this.listeners.add(listener);
    return () => {
      this.listeners.delete(listener);
    };
  }

  unsubscribeAll(): void {
    this.listeners.clear();
  }

  publish(events: DaemonEvent[]): void {
    if (events.length === 0 || this.listeners.size === 0) return;
    for (const event of events) {
      for (const listener of this.listeners) {
        try {
          listener(event);
        } catch {
          // A subscriber's failure must not undo or break a committed write.
        }
      }
    }
  }

  /** One transaction; events collected in it are published after the commit. */
  async tx<T>(fn: (q: Queryable, emit: Emit) => Promise<T>): Promise<T> {
    const events: DaemonEvent[] = [];
    let result: T;
    try {
      result = await this.db.transaction((q) => fn(q, (e) => events.push(e)));
    } catch (err) {
      throw mapDriverError(err);
    }
    this.publish(events);
    return result;
  }

  async read<T>(fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      throw mapDriverError(err);
    }
  }

  async mustExist(q: Queryable, table: string, id: unknown, field: string, what: string): Promise<void> {
    const found =
      typeof id === 'string' && (await q.get(`SELECT 1 AS x FROM ${table} WHERE id = ?`, [id])) !== undefined;
    if (!found) notFound(field, what, String(id));
  }
}
