// The daemon's access token: created once (random, <dataDir>/token, mode 0600), reused on every start.
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export function tokenPath(dataDir: string): string {
  return join(dataDir, 'token');
}

export function newToken(): string {
  return `hrl_${randomBytes(24).toString('base64url')}`;
}

/** The stored token, or null when none was created yet. */
export function readToken(dataDir: string): string | null {
  const file = tokenPath(dataDir);
  if (!existsSync(file)) return null;
  const token = readFileSync(file, 'utf8').trim();
  return token || null;
}

/**
 * The token to use: `override` (option or HARNESS_RL_TOKEN) wins; else the stored one; else a new one is
 * written with mode 0600. `created` says whether it was just created (the CLI prints it only then).
 */
export function ensureToken(dataDir: string, override?: string): { token: string; created: boolean } {
  if (override) return { token: override, created: false };
  const existing = readToken(dataDir);
  if (existing) return { token: existing, created: false };
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const token = newToken();
  const file = tokenPath(dataDir);
  try {
    writeFileSync(file, `${token}\n`, { mode: 0o600, flag: 'wx' });
  } catch (err) {
    // Another daemon created it between our check and our write: use theirs.
    if ((err as NodeJS.ErrnoException).code === 'EEXIST')
      return { token: readToken(dataDir)!, created: false };
    throw err;
  }
  chmodSync(file, 0o600);
  return { token, created: true };
}
