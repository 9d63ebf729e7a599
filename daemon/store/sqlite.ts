// SQLite driver (better-sqlite3, WAL). One connection per store; statements are synchronous, so
// transactions (whose callbacks are async) hold a small in-process lock that other calls wait on.
import { mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import { Worker } from 'node:worker_threads';
import Database from 'better-sqlite3';
import { type Driver, type Param, type Queryable, type Row, storable } from './driver';

type Statement = Database.Statement<unknown[], unknown>;

// WAL checkpoints (copying the WAL into the database file and fsyncing it) were over half the cost
// of a write-heavy load when SQLite ran them inside COMMIT. A worker thread with its own connection
// runs PASSIVE checkpoints instead, after writes, off the event loop; it never blocks writers or
// readers and does not change what a commit guarantees. The connection's own autocheckpoint stays
// as a backstop (at a larger WAL) for when the worker falls behind.
const CHECKPOINTER = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.lib);
const db = new Database(workerData.file, { timeout: 0 });
db.pragma('wal_autocheckpoint = 0');
parentPort.on('message', (m) => {
  if (m === 'close') { try { db.close(); } catch {} parentPort.close(); return; }
  try { db.pragma('wal_checkpoint(PASSIVE)'); } catch {}
  parentPort.postMessage('done');
});
`;
const SQLITE_LIB = createRequire(import.meta.url).resolve('better-sqlite3');
/** Commits before the checkpoint worker starts (short-lived stores, tests, never start one). */
const CHECKPOINTER_AFTER = 16;
const CHECKPOINT_COMMITS = 64;
const CHECKPOINT_MS = 200;

export class SqliteDriver implements Driver {
  readonly dialect = 'sqlite' as const;
  readonly forUpdate = '';
  readonly skipLocked = '';
  private readonly db: Database.Database;
  private readonly statements = new Map<string, Statement>();
  private locked = false;
  private readonly waiters: (() => void)[] = [];
  private readonly direct: Queryable;
  private commits = 0;
  private checkpointer: Worker | null = null;
  private checkpointing = false;
  private checkpointAgain = false;
  private checkpointerExited = false;
  private uncheckpointed = 0;
  private checkpointTimer: NodeJS.Timeout | null = null;

  constructor(readonly file: string) {
    if (file !== ':memory:') mkdirSync(dirname(file), { recursive: true });
    this.db = new Database(file, { timeout: 10_000 });
    // 16 KiB pages (effective only when the file is new). A commit writes each page it touched whole
    // to the WAL (a small call: the table's and two indexes' pages): with 32 KiB pages one small
    // call's lone commit (the proxy at one client) wrote ~98 KB and cost ~20 µs more CPU than with
    // 16 KiB (49 KB). 8 KiB saved about as much there but cost ~30 µs more a call in batches of calls
    // with 4k-id prompts stored whole (overflow chains), where 16 and 32 KiB cost the same
    // (store.small, store.ingest; README "Performance").
    this.db.pragma('page_size = 16384');
    this.db.pragma('journal_mode = WAL');
    // NORMAL: a commit survives a crash or kill -9 of the process (the WAL is in the OS cache);
    // only a power loss may roll back the last transactions, never corrupt the file.
    this.db.pragma('synchronous = NORMAL');
    this.db.pragma('foreign_keys = ON');
    this.db.pragma('cache_size = -65536');
    // Checkpoint every ~64 MiB of WAL rather than every 4 MiB (backstop: ~256 MiB once the
    // checkpoint worker runs).
    this.db.pragma('wal_autocheckpoint = 2000');
    this.direct = {
      all: async <T>(sql: string, params: Param[] = []) => this.allSync<T>(sql, params),
      get: async <T>(sql: string, params: Param[] = []) => this.allSync<T>(sql, params, true)[0],
      run: async (sql: string, params: Param[] = []) => this.runSync(sql, params),
      insertMany: async (table, columns, rows) => this.insertManySync(table, columns, rows),
      exec: async (sql: string) => {
        this.db.exec(sql);
      },
    };
  }

  private prepare(sql: string): Statement {
    let stmt = this.statements.get(sql);
    if (!stmt) {
      stmt = this.db.prepare(sql);
      if (this.statements.size > 500) this.statements.clear();
      this.statements.set(sql, stmt);
    }
    return stmt;
  }

  private allSync<T>(sql: string, given: Param[], one = false): T[] {
    const stmt = this.prepare(sql);
    const params = storable(given);
    if (!stmt.reader) {
      stmt.run(...params);
      return [];
    }
    if (one) {
      const row = stmt.get(...params);
      return row === undefined ? [] : [row as T];
    }
    return stmt.all(...params) as T[];
  }

  private runSync(sql: string, given: Param[]): number {
    const stmt = this.prepare(sql);
    const params = storable(given);
    if (stmt.reader) return stmt.all(...params).length;
    return stmt.run(...params).changes;
  }

  private insertManySync(table: string, columns: readonly string[], rows: Param[][]): void {
    if (rows.length === 0) return;
    const stmt = this.prepare(
      `INSERT INTO ${table} (${columns.join(', ')}) VALUES (${columns.map(() => '?').join(', ')})`,
    );
    for (const row of rows) stmt.run(...storable(row));
  }

  private async acquire(): Promise<void> {
    if (!this.locked) {
      this.locked = true;
      return;
    }
    await new Promise<void>((resolve) => this.waiters.push(resolve));
  }

  private release(): void {
    const next = this.waiters.shift();
    if (next) next();
    else this.locked = false;
  }

  /** Runs fn synchronously when no transaction is open, else after it. */
  private async outside<T>(fn: () => T): Promise<T> {
    if (!this.locked) return fn();
    await this.acquire();
    try {
      return fn();
    } finally {
      this.release();
    }
  }

  all<T = Row>(sql: string, params: Param[] = []): Promise<T[]> {
    return this.outside(() => this.allSync<T>(sql, params));
  }
  get<T = Row>(sql: string, params: Param[] = []): Promise<T | undefined> {
    return this.outside(() => this.allSync<T>(sql, params, true)[0]);
  }
  run(sql: string, params: Param[] = []): Promise<number> {
    return this.outside(() => this.runSync(sql, params));
  }
  insertMany(table: string, columns: readonly string[], rows: Param[][]): Promise<void> {
    return this.outside(() => this.insertManySync(table, columns, rows));
  }
  exec(sql: string): Promise<void> {
    return this.outside(() => {
      this.db.exec(sql);
    });
  }

  script<T = Row>(statements: { sql: string; params: Param[] }[]): Promise<T[]> {
    return this.transaction(async () => {
      let rows: T[] = [];
      for (const s of statements) rows = this.allSync<T>(s.sql, s.params);
      return rows;
    });
  }

  async transaction<T>(fn: (q: Queryable) => Promise<T>): Promise<T> {
    await this.acquire();
    try {
      this.prepare('BEGIN IMMEDIATE').run();
      let result: T;
      try {
        result = await fn(this.direct);
      } catch (err) {
        if (this.db.inTransaction) this.prepare('ROLLBACK').run();
        throw err;
      }
      try {
        this.prepare('COMMIT').run();
      } catch (err) {
        // A failed COMMIT (disk full, I/O error) leaves the transaction open: end it.
        if (this.db.inTransaction) this.prepare('ROLLBACK').run();
        throw err;
      }
      this.afterCommit();
      return result;
    } finally {
      this.release();
    }
  }

  /**
   * A checkpoint after every small commit copied each page again and fsynced the file once per call;
   * one every CHECKPOINT_COMMITS commits (or CHECKPOINT_MS after the first since the last) keeps the
   * WAL short at a fraction of that cost.
   */
  private afterCommit(): void {
    if (this.file === ':memory:') return;
    if (!this.checkpointer) {
      if (++this.commits < CHECKPOINTER_AFTER || !this.startCheckpointer()) return;
    }
    if (++this.uncheckpointed >= CHECKPOINT_COMMITS) {
      this.checkpointSoon();
      return;
    }
    if (this.checkpointTimer) return;
    this.checkpointTimer = setTimeout(() => {
      this.checkpointTimer = null;
      if (this.uncheckpointed > 0) this.checkpointSoon();
    }, CHECKPOINT_MS);
    this.checkpointTimer.unref();
  }

  private startCheckpointer(): boolean {
    try {
      const worker = new Worker(CHECKPOINTER, {
        eval: true,
        workerData: { lib: SQLITE_LIB, file: this.file },
      });
      worker.unref();
      worker.once('exit', () => {
        this.checkpointerExited = true;
      });
      worker.on('message', () => {
        this.checkpointing = false;
        if (this.checkpointAgain) this.checkpointSoon();
      });
      // Without the worker, the connection's own autocheckpoint keeps the WAL bounded as before.
      worker.on('error', () => {
        if (this.db.open) this.db.pragma('wal_autocheckpoint = 2000');
      });
      this.checkpointer = worker;
      this.db.pragma('wal_autocheckpoint = 8000');
      return true;
    } catch {
      return false;
    }
  }

  /** Asks the checkpoint worker for a PASSIVE checkpoint (one at a time; coalesced). */
  private checkpointSoon(): void {
    if (!this.checkpointer || !this.db.open) return;
    if (this.checkpointing) {
      this.checkpointAgain = true;
      return;
    }
    this.checkpointing = true;
    this.checkpointAgain = false;
    this.uncheckpointed = 0;
    this.checkpointer.postMessage('checkpoint');
  }

  async close(): Promise<void> {
    await this.acquire();
    try {
      if (this.checkpointTimer) clearTimeout(this.checkpointTimer);
      this.checkpointTimer = null;
      if (this.checkpointer) {
        const worker = this.checkpointer;
        this.checkpointer = null;
        worker.removeAllListeners('message');
        if (!this.checkpointerExited) {
          const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
          // Referenced while closing, or an otherwise idle process would exit before 'exit' fires.
          worker.ref();
          worker.postMessage('close');
          await exited;
        }
      }
      this.statements.clear();
      if (this.db.open) this.db.close();
    } finally {
      this.release();
    }
  }
}
