// What every entity module of the SQL store shares: the driver, one-transaction-with-events, reads
// that map driver errors, and existence checks that name the field.
import type { DaemonEvent, DaemonEventType } from '../../protocol/events';
import type { Driver, Queryable } from '../driver';
import { StoreError } from '../store';
import { CallChains } from './call-chain';
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
  /** Per event type, how many listeners take it (those that take every type are not counted here). */
  private readonly typed = new Map<DaemonEventType, number>();
  private untyped = 0;
  closed = false;
  /** The calls that later calls of their chains are stored from (call-chain.ts). */
  readonly chains = new CallChains();

  constructor(readonly db: Driver) {}

  /** Whether anyone takes `type` events (events that cost work to build are skipped otherwise). */
  listeningTo(type: DaemonEventType): boolean {
    return this.untyped > 0 || (this.typed.get(type) ?? 0) > 0;
  }

  /** `types`: the only event types `listener` gets (absent: every one). */
  subscribe(listener: (event: DaemonEvent) => void, types?: readonly DaemonEventType[]): () => void {
    const only = types ? new Set(types) : null;
    const each = only ? (e: DaemonEvent) => (only.has(e.type) ? listener(e) : undefined) : listener;
    this.listeners.add(each);
    if (only) for (const t of only) this.typed.set(t, (this.typed.get(t) ?? 0) + 1);
    else this.untyped++;
    return () => {
      if (!this.listeners.delete(each)) return;
      if (only) for (const t of only) this.typed.set(t, (this.typed.get(t) ?? 1) - 1);
      else this.untyped--;
    };
  }

  unsubscribeAll(): void {
    this.listeners.clear();
    this.typed.clear();
    this.untyped = 0;
  }

  publish(events: DaemonEvent[]): void {
    for (const event of events) this.chains.ended(event);
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
