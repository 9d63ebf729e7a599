// The one redactor: every text the daemon stores, logs or shows passes here, so an API key, token or
// URL credential that reaches it is replaced by `[redacted]` wherever it would have been kept.
import { JsonText, jsonText, plainValue } from './store/json-text';

export const REDACTED = '[redacted]';

// Vendor key shapes (each as its issuer documents it), preceded by no letter or digit ("task-…" is
// not an OpenAI key). Long enough that ordinary words and ids do not match.
const KEYS = [
  'sk-[A-Za-z0-9_-]{16,}', // OpenAI (sk-, sk-proj-), Anthropic (sk-ant-)
  'hr[klt]_[A-Za-z0-9_-]{16,}', // harness-rl rollout keys, daemon and node tokens, event tickets
  'AIza[A-Za-z0-9_-]{30,}', // Google API keys (35 after AIza)
  'gh[pousr]_[A-Za-z0-9]{36,}', // GitHub tokens
  'github_pat_[A-Za-z0-9_]{22,}', // GitHub fine-grained tokens
  'hf_[A-Za-z0-9]{30,}', // Hugging Face
  '(?:AKIA|ASIA)[0-9A-Z]{16}', // AWS access key ids
  'glpat-[A-Za-z0-9_-]{20,}', // GitLab
  'xox[abposr]-[A-Za-z0-9-]{10,}', // Slack
  '[rs]k_(?:live|test)_[A-Za-z0-9]{16,}', // Stripe
  'eyJ[A-Za-z0-9_-]{8,}\\.eyJ[A-Za-z0-9_-]{8,}\\.[A-Za-z0-9_-]*', // JWTs (header.payload.signature)
  '-----BEGIN [A-Z ]*PRIVATE KEY-----[\\s\\S]*?-----END [A-Z ]*PRIVATE KEY-----',
].map((k) => `(?<![A-Za-z0-9])(?:${k})`);

/** Query parameters whose value is a credential, wherever a URL carries them (case-insensitive). */
export const SECRET_QUERY_PARAMS = [
  'key',
  'api_key',
  'apikey',
  'api-key',
  'token',
  'access_token',
  'refresh_token',
  'id_token',
  'auth',
  'password',
  'passwd',
  'secret',
  'client_secret',
  'sig',
  'signature',
  'code',
  'x-goog-api-key',
  'x-amz-signature',
  'x-amz-credential',
  'x-amz-security-token',
];
// Names in either case, spelt out: V8 before Node 23 has no `(?i:…)` for a part of a pattern.
const anyCase = (name: string) =>
  name.replace(/[-[\]/{}()*+?.\\^$|]/g, '\\$&').replace(/[a-z]/g, (c) => `[${c}${c.toUpperCase()}]`);
// Groups 1–3 keep what precedes the secret: a URL's scheme (userinfo follows), a query parameter's
// name, an Authorization scheme.
const URL_USERINFO = '([a-zA-Z][a-zA-Z0-9+.-]*://)[^\\s/?#@"\'<>\\\\]+@';
const URL_QUERY = `([?&](?:${SECRET_QUERY_PARAMS.map(anyCase).join('|')})=)[^&#\\s"'<>\\\\]+`;
const AUTH_HEADER = '((?:Bearer|Basic)\\s+)[A-Za-z0-9._~+/-]{16,}=*';
const PATTERN = new RegExp([URL_USERINFO, URL_QUERY, AUTH_HEADER, ...KEYS].join('|'), 'g');
const PEM = KEYS.at(-1) as string;
// Where PATTERN may match, as alternatives that each open with a literal: V8 scans for those several
// times faster than for PATTERN (whose alternatives open with classes and lookbehinds). Each trigger
// is checked with PATTERN on the text around it only. Alternatives that open alike are written as
// one (`g(?:h…|ithub…|lpat-)`): V8 then tests each character against fewer of them (~8% faster).
const KEY_TRIGGERS = [
  's(?:k-|k_(?:live|test)_)', // sk-, sk_live_, sk_test_
  'rk_(?:live|test)_',
  'h(?:r[klt]_|f_)',
  'g(?:h[pousr]_|ithub_pat_|lpat-)',
  'xox[abposr]-',
  'A(?:Iza|[KS]IA)',
  'eyJ',
  '-----BEGIN',
  `[?&](?:${SECRET_QUERY_PARAMS.map(anyCase).join('|')})=`,
];
const TRIGGER = new RegExp(['B(?:earer|asic)\\s', '://', ...KEY_TRIGGERS].join('|'), 'g');
// In a JSON text a value's characters may be escaped: `\nsk-…` is a key at a line's start, `:\/\/` a
// scheme. The JSON scan also stops at escaped whitespace after Bearer and Basic and an escaped slash
// after a colon, and checks the text around every trigger with its escapes decoded. An escaped
// letter or digit (`\u0073k-…`, which no common encoder writes) sends the text to the walk, where
// values are parsed; an escape of another character some trigger spells (`&-/:=?_`, space) is
// checked around it (Go escapes `&` as `\u0026`; its `\u003c` for `<` concerns no pattern).
const ESCAPE = '\\\\u00(?:2[06dDfF]|3[0-9aAdDfF]|[4-7][0-9a-fA-F])';
const JSON_TRIGGER = new RegExp(
  [ESCAPE, 'B(?:earer|asic)(?:\\s|\\\\[nrtfbu])', ':(?://|\\\\/)', ...KEY_TRIGGERS].join('|'),
  'g',
);
const AROUND = new RegExp(PATTERN.source);
const PEM_AT = new RegExp(PEM, 'y');
/** Characters before a trigger (a URL's scheme) and after it (a key's body) that PATTERN may need. */
const BEFORE = 64;
const AFTER = 512;
const BACKSLASH = 92;

const JSON_ESCAPES = /\\(?:u([0-9a-fA-F]{4})|([\s\S]))/g;
const SIMPLE_ESCAPES: Record<string, string> = { n: '\n', r: '\r', t: '\t', b: '\b', f: '\f' };
/** A piece of JSON text with its escapes decoded (a value's characters as they are). */
const unescaped = (s: string) =>
  s.replace(JSON_ESCAPES, (_m, hex?: string, c?: string) =>
    hex ? String.fromCharCode(Number.parseInt(hex, 16)) : (SIMPLE_ESCAPES[c as string] ?? (c as string)),
  );

/** `\u00XX` spelling a letter or digit. */
function escapedAlnum(m: string): boolean {
  if (m.charCodeAt(0) !== BACKSLASH || m.charCodeAt(1) !== 117 /* u */) return false;
  const c = Number.parseInt(m.slice(2), 16);
  return (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122);
}

/**
 * Does PATTERN match around the trigger `m` at `at`? `slash`: the first backslash at or after the
 * window's start in a JSON text (-1: none), where escapes are decoded first.
 */
function hitAround(text: string, m: string, at: number, slash: number): boolean {
  let from = Math.max(0, at - BEFORE);
  if (slash === -1 || slash >= at + AFTER)
    return m === '://' ? userinfoAt(text, at) : AROUND.test(text.slice(from, at + AFTER));
  // The window opens on a whole escape: a run of backslashes is taken from its start.
  while (from > 0 && text.charCodeAt(from - 1) === BACKSLASH) from--;
  const window = unescaped(text.slice(from, at + AFTER));
  // A private key block is longer than the window: an escape near one sends the text to the walk.
  return AROUND.test(window) || window.includes('-----BEGIN') || hasLiteral(window);
}

const USERINFO_AT = new RegExp(URL_USERINFO.slice(URL_USERINFO.indexOf(')') + 1), 'y');
const schemeChar = (c: number) =>
  (c >= 97 && c <= 122) || (c >= 65 && c <= 90) || (c >= 48 && c <= 57) || c === 43 || c === 45 || c === 46;
const letter = (c: number) => (c >= 97 && c <= 122) || (c >= 65 && c <= 90);

/**
 * Does URL_USERINFO match at the `://` at `at`? The check PATTERN makes over the window, without the
 * window: every URL (a backend's in each call's fields) passes here.
 */
function userinfoAt(text: string, at: number): boolean {
  let i = at - 1;
  let scheme = false;
  for (; i >= 0 && schemeChar(text.charCodeAt(i)); i--) scheme ||= letter(text.charCodeAt(i));
  if (!scheme) return false;
  USERINFO_AT.lastIndex = at + 3;
  return USERINFO_AT.test(text);
}

/** Does PATTERN match in `text`? `json`: `text` is JSON, where a value's characters may be escaped. */
function patternHit(text: string, json: boolean): boolean {
  const trigger = json ? JSON_TRIGGER : TRIGGER;
  trigger.lastIndex = 0;
  // The next backslash, looked for again only once the windows have passed it: one pass in all.
  let slash = json ? -2 : -1;
  for (let m = trigger.exec(text); m !== null; m = trigger.exec(text)) {
    const at = m.index;
    if (m[0] === '-----BEGIN') {
      PEM_AT.lastIndex = at;
      if (PEM_AT.test(text)) return true;
      continue;
    }
    if (escapedAlnum(m[0])) return true;
    const from = Math.max(0, at - BEFORE);
    if (slash === -2 || (slash !== -1 && slash < from)) slash = text.indexOf('\\', from);
    if (hitAround(text, m[0], at, slash)) return true;
  }
  return false;
}

/** Exact values to redact that have no recognisable shape (a chosen daemon token, an upstream key). */
const literals = new Set<string>();

/** Redact `value` (8 characters or more) from everything from now on. */
export function registerSecret(value: string | null | undefined): void {
  if (value && value.length >= 8) literals.add(value);
}

/** Does `text` hold anything the redactor replaces? */
export function hasSecret(text: string): boolean {
  return patternHit(text, false) || hasLiteral(text);
}

/** Does this JSON text hold a secret, or escape printable characters (so that only its value shows)? */
export function mayHoldSecret(jsonText: string): boolean {
  return patternHit(jsonText, true) || hasLiteral(jsonText);
}

function hasLiteral(text: string): boolean {
  for (const s of literals) if (text.includes(s)) return true;
  return false;
}

/** `text` with every key, token and URL credential replaced by `[redacted]`; the same string when clean. */
export function redactText(text: string): string {
  if (!hasSecret(text)) return text;
  let out = text.replace(PATTERN, (_m, scheme?: string, param?: string, auth?: string) =>
    scheme ? `${scheme}${REDACTED}@` : `${param ?? auth ?? ''}${REDACTED}`,
  );
  for (const s of literals) if (out.includes(s)) out = out.split(s).join(REDACTED);
  return out;
}

/** A URL as it may be shown or stored: no userinfo, no secret query parameter values. */
export function redactUrl(url: string): string {
  return redactText(url);
}

/** Every string inside `v` (object keys too) redacted: a new value where something changed, else `v`. */
export function redactValue<T>(v: T): T {
  if (typeof v === 'string') return redactText(v) as T;
  if (v instanceof JsonText) return redactJson(v) as T;
  if (Array.isArray(v)) {
    let out: unknown[] | null = null;
    for (let i = 0; i < v.length; i++) {
      const x = redactValue(v[i]);
      if (x === v[i]) continue;
      out ??= v.slice();
      out[i] = x;
    }
    return (out ?? v) as T;
  }
  if (v && typeof v === 'object') {
    let changed = false;
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) {
      const rk = redactText(k);
      const rx = redactValue(x);
      if (rk !== k || rx !== x) changed = true;
      out[rk] = rx;
    }
    return (changed ? out : v) as T;
  }
  return v;
}

/**
 * A body about to be stored, redacted, as a JsonText (its text is what gets written, so the store does
 * not serialise it again). The common clean case costs one scan of the text.
 */
export function redactJson(v: unknown): unknown {
  const text = jsonText(v);
  if (text === null) return v;
  if (!mayHoldSecret(text)) return v instanceof JsonText ? v : new JsonText(text, v);
  const value = plainValue(v);
  const out = redactValue(value);
  return out === value ? new JsonText(text, value) : new JsonText(JSON.stringify(out), out);
}
