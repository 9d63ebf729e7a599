// Upstream API keys (OpenAI, Anthropic …) live in <dataDir>/secrets.json, readable by the owner only.
// The proxy reads them when a recording forwards to an upstream; they never enter the store or the API.
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';

const SecretsFile = z.record(z.string(), z.string());

export function secretsPath(dataDir: string): string {
  return join(dataDir, 'secrets.json');
}

/** All stored secrets by name; an empty object when the file does not exist yet. */
export function readSecrets(dataDir: string): Record<string, string> {
  const file = secretsPath(dataDir);
  if (!existsSync(file)) return {};
  const parsed = SecretsFile.safeParse(JSON.parse(readFileSync(file, 'utf8')));
  if (!parsed.success) throw new Error(`${file}: ${z.prettifyError(parsed.error)}`);
  return parsed.data;
}

/** Store (or with `null`, remove) one secret; the file is replaced atomically and kept at mode 0600. */
export function writeSecret(dataDir: string, name: string, value: string | null): void {
  if (!name) throw new Error('a secret needs a name');
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const secrets = readSecrets(dataDir);
  if (value === null) delete secrets[name];
  else secrets[name] = value;
  const file = secretsPath(dataDir);
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(secrets, null, 2)}\n`, { mode: 0o600 });
  chmodSync(tmp, 0o600);
  renameSync(tmp, file);
}
