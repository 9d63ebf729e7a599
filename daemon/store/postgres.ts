// PostgreSQL driver (pg Pool). `?` placeholders become $1…$n. A `schema` query parameter in the URL
// (not a libpq one; removed before connecting) selects a schema via search_path, created if missing.
import pg from 'pg';
import { type Driver, type Param, type Queryable, type Row, storable } from './driver';

const JSON_OIDS = new Set([114, 3802]);
const INT8_OID = 20;
const TIMESTAMPTZ_OID = 1184;

/**
 * timestamptz as the store's ISO strings, without a Date round trip (the sessions run in UTC, so the
 * text is `YYYY-MM-DD HH:MM:SS[.ffffff]+00`); anything unexpected goes through Date.
 */
export function pgTimestampToIso(text: string): string {
  if (text.length >= 22 && text.endsWith('+00') && text[10] === ' ' && text[4] === '-') {
    const frac = text.slice(19, -3); // '' or '.f…'
    const ms = frac === '' ? '000' : `${frac.slice(1, 4)}000`.slice(0, 3);
    return `${text.slice(0, 10)}T${text.slice(11, 19)}.${ms}Z`;
  }
  return new Date(text).toISOString();
}

/** json/jsonb come back as text (the store parses them itself, like SQLite's TEXT), int8 as number. */
const types = {
  getTypeParser(oid: number, format?: 'text' | 'binary') {
    if (JSON_OIDS.has(oid)) return (value: string) => value;
    if (oid === TIMESTAMPTZ_OID && format !== 'binary') return pgTimestampToIso;
    if (oid === INT8_OID) return (value: string) => Number(value);
    // biome-ignore lint/suspicious/noExplicitAny: pg's overloads
    return (pg.types.getTypeParser as any)(oid, format ?? 'text');
  },
};

const converted = new Map<string, string>();
function toPg(sql: string): string {
  let out = converted.get(sql);
  if (out === undefined) {
    let n = 0;
    out = sql.replace(/\?/g, () => `$${++n}`);
    if (converted.size > 2000) converted.clear();
    converted.set(sql, out);
  }
  return out;
}

/**
 * A parameter as an SQL literal, for statements sent without parameters (script). Strings are quoted
 * with '' for ' (standard_conforming_strings is on for every connection: a backslash is an ordinary
 * character); bytes are bytea hex; numbers that SQL cannot spell (NaN, ±Infinity) are quoted, as
 * PostgreSQL's own float input reads them.
 */
export function pgLiteral(v: Param): string {
  if (v === null) return 'NULL';
  if (typeof v === 'number') return Number.isFinite(v) ? String(v) : `'${v}'`;
  if (Buffer.isBuffer(v)) return `'\\x${v.toString('hex')}'`;
  return `'${v.replaceAll("'", "''")}'`;
}

/** `sql` with each `?` replaced by its parameter's literal. */
function inlined(sql: string, params: Param[]): string {
  const parts = sql.split('?');
  if (parts.length !== params.length + 1)
    throw new Error(`${params.length} parameters for ${parts.length - 1} placeholders`);
  let out = parts[0];
  const values = storable(params);
  for (let i = 0; i < values.length; i++) out += pgLiteral(values[i]) + parts[i + 1];
  return out;
}

const MAX_PARAMS = 30_000;

// Named (prepared) statements: PostgreSQL parses and plans each once per connection. The store's SQL
// is a small fixed set; bulk inserts, whose text varies with the row count, stay unnamed.
const names = new Map<string, string>();
function statementName(sql: string): string | undefined {
  let name = names.get(sql);
  if (name === undefined && names.size < 1000) {
    name = `hrl_${names.size}`;
    names.set(sql, name);
  }
  return name;
}

function queryable(client: pg.Pool | pg.PoolClient): Queryable {
  return {
    async all<T = Row>(sql: string, params: Param[] = []): Promise<T[]> {
      const res = await client.query({ name: statementName(sql), text: toPg(sql), values: storable(params) });
      return res.rows as T[];
    },
    async get<T = Row>(sql: string, params: Param[] = []): Promise<T | undefined> {
      const res = await client.query({ name: statementName(sql), text: toPg(sql), values: storable(params) });
      return res.rows[0] as T | undefined;
    },
    async run(sql: string, params: Param[] = []): Promise<number> {
      const res = await client.query({ name: statementName(sql), text: toPg(sql), values: storable(params) });
      return res.rowCount ?? 0;
    },
    async insertMany(table: string, columns: readonly string[], rows: Param[][]): Promise<void> {
      const perChunk = Math.max(1, Math.min(1000, Math.floor(MAX_PARAMS / columns.length)));
      for (let start = 0; start < rows.length; start += perChunk) {
        const chunk = rows.slice(start, start + perChunk);
        const params: Param[] = [];
        const values: string[] = [];
        for (const row of chunk) {
          const slots: string[] = [];
          for (const v of storable(row)) {
            params.push(v);
            slots.push(`$${params.length}`);
          }
          values.push(`(${slots.join(', ')})`);
        }
        await client.query(
          `INSERT INTO ${table} (${columns.join(', ')}) VALUES ${values.join(', ')}`,
          params,
        );
      }
    },
    async exec(sql: string): Promise<void> {
      await client.query(sql);
    },
  };
}

export function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

export class PostgresDriver implements Driver {
  readonly dialect = 'postgres' as const;
  readonly forUpdate = ' FOR UPDATE';
  readonly skipLocked = ' FOR UPDATE SKIP LOCKED';
  readonly schema: string | null;
  private readonly pool: pg.Pool;
  private readonly q: Queryable;
  all: Queryable['all'];
  get: Queryable['get'];
  run: Queryable['run'];
  insertMany: Queryable['insertMany'];
  exec: Queryable['exec'];

  constructor(url: string, options: { max?: number } = {}) {
    const parsed = new URL(url);
    this.schema = parsed.searchParams.get('schema');
    parsed.searchParams.delete('schema');
    if (this.schema !== null && !/^[A-Za-z_][A-Za-z0-9_]{0,62}$/.test(this.schema)) {
      throw new Error(`invalid schema name in the store URL: ${this.schema}`);
    }
    this.pool = new pg.Pool({
      connectionString: parsed.toString(),
      max: options.max ?? 10,
      types,
      connectionTimeoutMillis: 10_000,
      // Set at connection start-up, so every pooled connection has them before any query: UTC (for
      // pgTimestampToIso), string literals as pgLiteral writes them, and the schema.
      options: `-c TimeZone=UTC -c standard_conforming_strings=on${this.schema ? ` -c search_path=${quoteIdent(this.schema)}` : ''}`,
    });
    // An idle client losing its connection must not crash the daemon; the next query reconnects.
    this.pool.on('error', () => {});
    this.q = queryable(this.pool);
    this.all = this.q.all;
    this.get = this.q.get;
    this.run = this.q.run;
    this.insertMany = this.q.insertMany;
    this.exec = this.q.exec;
  }

  /** Creates the schema named in the URL if it does not exist. */
  async init(): Promise<void> {
    if (this.schema) await this.pool.query(`CREATE SCHEMA IF NOT EXISTS ${quoteIdent(this.schema)}`);
  }

  async script<T = Row>(statements: { sql: string; params: Param[] }[]): Promise<T[]> {
    const text = statements.map((s) => inlined(s.sql, s.params)).join(';\n');
    // Several statements in one query string run as one implicit transaction (rolled back on error).
    const res = (await this.pool.query(text)) as pg.QueryResult | pg.QueryResult[];
    return (Array.isArray(res) ? res[res.length - 1] : res).rows as T[];
  }

  async transaction<T>(fn: (q: Queryable) => Promise<T>): Promise<T> {
    const client = await this.pool.connect();
    let broken = false;
    try {
      await client.query('BEGIN');
      try {
        const result = await fn(queryable(client));
        await client.query('COMMIT');
        return result;
      } catch (err) {
        await client.query('ROLLBACK').catch(() => {
          broken = true;
        });
        throw err;
      }
    } finally {
      client.release(broken);
    }
  }

  async close(): Promise<void> {
    await this.pool.end();
  }
}
