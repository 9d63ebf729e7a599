// openStore: what the daemon and the CLI call. 'sqlite' → <dataDir>/harness-rl.db; a postgres://
// (or postgresql://) URL → that database (a `schema=NAME` query parameter selects a schema).
import { join } from 'node:path';
import type { Driver } from './driver';
import { LATEST_VERSION, migrate } from './migrations';
import { SqlStore } from './sql-store';
import { SqliteDriver } from './sqlite';
import type { Store } from './store';

export const SQLITE_FILE = 'harness-rl.db';

export interface OpenOptions {
  /** Migrate only up to this schema version (tests of the upgrade path). Default: the latest. */
  schemaVersion?: number;
}

export function isPostgresSpec(spec: string): boolean {
  return /^postgres(ql)?:\/\//i.test(spec);
}

/** Opens (creating and migrating as needed) the store named by `spec`. */
export async function openStore(spec: string, dataDir: string, options: OpenOptions = {}): Promise<Store> {
  let driver: Driver;
  if (spec === 'sqlite' || spec === '' || spec === undefined) {
    driver = new SqliteDriver(join(dataDir, SQLITE_FILE));
  } else if (spec.startsWith('sqlite:')) {
    // sqlite:/path/to/file.db — an explicit file (tools, tests).
    driver = new SqliteDriver(spec.slice('sqlite:'.length));
  } else if (isPostgresSpec(spec)) {
    // loaded only for a PostgreSQL store: pg stays out of a SQLite daemon's memory
    const { PostgresDriver } = await import('./postgres');
    const pgDriver = new PostgresDriver(spec);
    try {
      await pgDriver.init();
    } catch (err) {
      await pgDriver.close().catch(() => {});
      throw err;
    }
    driver = pgDriver;
  } else {
    throw new Error(`unknown store "${spec}": use "sqlite" or a postgres:// URL`);
  }
  try {
    await migrate(driver, options.schemaVersion ?? LATEST_VERSION);
  } catch (err) {
    await driver.close().catch(() => {});
    throw err;
  }
  return new SqlStore(driver);
}

export { SqlStore } from './sql-store';
