// The test PostgreSQL for the store tests, end-to-end tests and bench/store.ts: its URL (HARNESS_RL_TEST_PG,
// default: what scripts/start-postgres.sh sets up), whether it answers, and throwaway schemas on it; and a
// throwaway store (temp data folder, plus a schema for PostgreSQL) for either backend.
// Lives beside the store (not in test/) so the daemon's own store.test.ts can import it too.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';

export const PG_URL =
  process.env.HARNESS_RL_TEST_PG || 'postgres://harness_rl:harness_rl@127.0.0.1:5432/harness_rl_test';

/** PG_URL without its password, for messages. */
export const PG_SHOWN = (() => {
  const u = new URL(PG_URL);
  if (u.password) u.password = '***';
  return u.toString();
})();

/** Every row of every table of `schema`, as text (tests grep it for what must not be stored). */
export async function pgSchemaText(schema: string): Promise<string> {
  const client = new pg.Client({ connectionString: PG_URL });
  await client.connect();
  try {
    const tables = await client.query(
      'SELECT table_name FROM information_schema.tables WHERE table_schema = $1',
      [schema],
    );
    let out = '';
    for (const { table_name } of tables.rows)
      out += JSON.stringify((await client.query(`SELECT * FROM ${schema}."${table_name}"`)).rows);
    return out;
  } finally {
    await client.end();
  }
}

/** null when PostgreSQL at PG_URL connects and answers a query, else why not. */
export async function postgresProblem(): Promise<string | null> {
  const client = new pg.Client({ connectionString: PG_URL, connectionTimeoutMillis: 3000 });
  try {
    await client.connect();
    await client.query('SELECT 1');
    return null;
  } catch (err) {
    return (err as Error).message;
  } finally {
    await client.end().catch(() => {});
  }
}

/** The store spec for PG_URL with the given schema (created by the store when it opens). */
export function pgSchemaUrl(schema: string): string {
  const url = new URL(PG_URL);
  url.searchParams.set('schema', schema);
  return url.toString();
}

/** Drop a schema on PG_URL (and everything in it), if it exists. */
export async function dropPgSchema(schema: string): Promise<void> {
  const admin = new pg.Client({ connectionString: PG_URL });
  await admin.connect();
  await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  await admin.end();
}

/** Where a test store lives: its spec for openStore, its data folder, and drop() to remove both. */
export interface TestStoreSpace {
  spec: string;
  dataDir: string;
  drop(): Promise<void>;
}

/**
 * A new temp data folder (`<tmpPrefix>…`) and, for postgres, a new schema `<schemaPrefix><hex>` on PG_URL;
 * drop() removes the folder and the schema.
 */
export function freshStoreSpace(
  backend: 'sqlite' | 'postgres',
  tmpPrefix: string,
  schemaPrefix = 't_',
): TestStoreSpace {
  if (backend === 'sqlite') {
    const dataDir = mkdtempSync(join(tmpdir(), tmpPrefix));
    return { spec: 'sqlite', dataDir, drop: async () => rmSync(dataDir, { recursive: true, force: true }) };
  }
  const schema = `${schemaPrefix}${randomBytes(6).toString('hex')}`;
  const dataDir = mkdtempSync(join(tmpdir(), tmpPrefix));
  return {
    spec: pgSchemaUrl(schema),
    dataDir,
    async drop() {
      rmSync(dataDir, { recursive: true, force: true });
      await dropPgSchema(schema);
    },
  };
}
