// What the redactor takes out of a run config or a recording's upstream before the store sees it (URL
// credentials, keys, node tokens) is held in <dataDir>/secrets.json (mode 0600) under the entity's id,
// so that this daemon can put it back when it resumes the run or forwards the recording's calls.
import { REDACTED, redactText } from '../redact';
import { readSecrets, writeSecret } from './secrets';

type Path = (string | number)[];

/** `value` with its secrets redacted, and the originals by path (JSON of the path array). */
export function splitSecrets<T>(value: T): { value: T; held: Record<string, string> } {
  const held: Record<string, string> = {};
  const walk = (v: unknown, path: Path): unknown => {
    if (typeof v === 'string') {
      // A field named token is a secret whatever it looks like (node agents' tokens).
      const r = path.at(-1) === 'token' ? REDACTED : redactText(v);
      if (r !== v) held[JSON.stringify(path)] = v;
      return r;
    }
    if (Array.isArray(v)) return v.map((x, i) => walk(x, [...path, i]));
    if (v && typeof v === 'object')
      return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, walk(x, [...path, k])]));
    return v;
  };
  return { value: walk(value, []) as T, held };
}

/** Keep `held` for the entity `name` (nothing is written when it is empty). */
export function holdSecrets(dataDir: string, name: string, held: Record<string, string>): void {
  if (Object.keys(held).length > 0) writeSecret(dataDir, name, JSON.stringify(held));
}

/**
 * `value` with the secrets held for `name` put back. Throws, naming the fields, when it was stored
 * redacted and this daemon holds nothing for it (another daemon on a shared store started it).
 */
export function restoreSecrets<T>(dataDir: string, name: string, value: T): T {
  const entry = readSecrets(dataDir)[name];
  const held: Record<string, string> = entry ? JSON.parse(entry) : {};
  const missing: string[] = [];
  const walk = (v: unknown, path: Path): unknown => {
    if (typeof v === 'string') {
      const original = held[JSON.stringify(path)];
      if (original !== undefined) return original;
      if (v.includes(REDACTED)) missing.push(path.join('.'));
      return v;
    }
    if (Array.isArray(v)) return v.map((x, i) => walk(x, [...path, i]));
    if (v && typeof v === 'object')
      return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, walk(x, [...path, k])]));
    return v;
  };
  const out = walk(value, []) as T;
  if (missing.length > 0)
    throw new Error(
      `${name}: ${missing.join(', ')} ${missing.length === 1 ? 'was' : 'were'} stored redacted and this daemon does not hold the original (${dataDir}/secrets.json): the daemon that started it does; or start it again from its config`,
    );
  return out;
}
