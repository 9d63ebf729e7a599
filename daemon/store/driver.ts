// The small SQL seam both backends implement: the store's logic (sql/, one file per entity) is
// written once against it. SQL uses `?` placeholders (converted to $n for PostgreSQL; never put `?` in literals).
export type Param = string | number | null | Buffer;
export type Row = Record<string, unknown>;

/**
 * The parameters as both stores can hold them: a NUL (U+0000) in a string becomes U+FFFD. PostgreSQL's
 * text refuses NUL (error 22021, a 500 for whoever sent it) and SQLite's keeps it; this keeps the two
 * stores alike for text that reaches them from elsewhere (a backend's error, a model name in a proxied
 * body). What a client sends to the REST API is refused earlier, with a 400 naming the field
 * (protocol/bounds storedText and Id). JSON text never holds a raw NUL (JSON escapes it as \u0000),
 * so bodies are stored unchanged. Returns `params` itself when nothing needs replacing.
 */
export function storable(params: Param[]): Param[] {
  let out: Param[] | null = null;
  for (let i = 0; i < params.length; i++) {
    const v = params[i];
    if (typeof v === 'string' && v.includes('\u0000')) {
      out ??= params.slice();
      out[i] = v.replaceAll('\u0000', '\ufffd');
    }
  }
  return out ?? params;
}

export interface Queryable {
  all<T = Row>(sql: string, params?: Param[]): Promise<T[]>;
  get<T = Row>(sql: string, params?: Param[]): Promise<T | undefined>;
  /** Runs a statement; resolves to the number of changed rows. */
  run(sql: string, params?: Param[]): Promise<number>;
  /** Inserts many rows (batched into multi-row statements where that is faster). */
  insertMany(table: string, columns: readonly string[], rows: Param[][]): Promise<void>;
  /** Runs several statements separated by `;` (migrations). */
  exec(sql: string): Promise<void>;
}

export interface Driver extends Queryable {
  readonly dialect: 'sqlite' | 'postgres';
  /** `FOR UPDATE` where row locks exist (PostgreSQL), '' in SQLite (its write transactions are exclusive). */
  readonly forUpdate: string;
  /** `FOR UPDATE SKIP LOCKED` in PostgreSQL, '' in SQLite. */
  readonly skipLocked: string;
  /**
   * Statements run in order as one transaction in one round trip (PostgreSQL: one simple-protocol
   * query, the parameters written into it as literals; each statement still reads with a snapshot of
   * its own start, so one can read what a lock taken by an earlier one waited for). Resolves to the
   * last statement's rows.
   */
  script<T = Row>(statements: { sql: string; params: Param[] }[]): Promise<T[]>;
  /** One write transaction; committed when fn resolves, rolled back when it throws. */
  transaction<T>(fn: (q: Queryable) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}
