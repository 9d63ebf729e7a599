// Secrets never reach the trace store: API-key-looking strings in recorded bodies are replaced.

const KEY_PATTERN = /(sk-[A-Za-z0-9_-]{8,}|hrk_[A-Za-z0-9_-]{8,})/g;
const KEY_TEST = /sk-[A-Za-z0-9_-]{8,}|hrk_[A-Za-z0-9_-]{8,}/;
export const REDACTED = '[redacted]';

/**
 * The body with every string that looks like an API key (`sk-…`, `hrk_…`) or equals one of `secrets`
 * redacted. `raw` (the body's JSON text, when known) lets the common no-secret case skip the walk.
 */
export function redact(body: unknown, secrets: readonly string[] = [], raw?: string): unknown {
  if (raw !== undefined && !hasSecret(raw, secrets)) return body;
  return walk(
    body,
    secrets.filter((s) => s && s.length >= 8),
  );
}

/** Does this text contain a key-looking string or one of `secrets`? */
export function hasSecret(raw: string, secrets: readonly string[] = []): boolean {
  if (KEY_TEST.test(raw)) return true;
  for (const s of secrets) if (s && s.length >= 8 && raw.includes(s)) return true;
  return false;
}

function walk(v: unknown, secrets: readonly string[]): unknown {
  if (typeof v === 'string') {
    let s = v.replace(KEY_PATTERN, REDACTED);
    for (const secret of secrets) if (s.includes(secret)) s = s.split(secret).join(REDACTED);
    return s;
  }
  if (Array.isArray(v)) return v.map((x) => walk(x, secrets));
  if (v && typeof v === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) out[k] = walk(x, secrets);
    return out;
  }
  return v;
}
