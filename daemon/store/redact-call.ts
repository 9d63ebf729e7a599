// A call's fields through the one redactor before they are written. The bodies are scanned only where
// they differ from the chain's base (stored, hence already clean): an agent's call resends its history,
// so the scan costs what the call adds, not what it repeats.
import type { NewLlmCall } from '../protocol/entities';
import { mayHoldSecret, redactJson, redactText, redactValue } from '../redact';
import { jsonText } from './json-text';
import { type Shared, sharedChars } from './sql/call-chain';

const CHUNK = 1024;

/** Characters before the end of a shared prefix scanned again: a key that straddles it is found. */
const OVERLAP = 256;
/**
 * Characters after the start of a shared suffix scanned again: a trigger within OVERLAP of that point
 * gets the whole window after it that the redactor checks (512 characters, AFTER in ../redact.ts).
 */
const END_OVERLAP = OVERLAP + 512;
/** A backend request's unscanned rest (past the chain's base) compared with the request from this length. */
const COMPARE_FROM = 4096;

const orNull = <T>(s: T): T => (typeof s === 'string' ? (redactText(s) as T) : s);

/** The call with every small text field redacted (the bodies are left to redactBodies). */
export function redactFields(call: NewLlmCall): NewLlmCall {
  // One scan of them all: the common clean call costs one short JSON text.
  const { bridge, error, backend, model, finish_reason, usage, tags } = call;
  if (!mayHoldSecret(JSON.stringify([bridge, error, backend, model, finish_reason, usage, tags])))
    return call;
  return {
    ...call,
    bridge: bridge == null ? bridge : redactValue(bridge),
    error: orNull(error),
    backend: orNull(backend),
    model: orNull(model),
    finish_reason: orNull(finish_reason),
    usage: usage == null ? usage : redactValue(usage),
    tags: tags == null ? tags : redactValue(tags),
  };
}

/** How many trailing characters `a` and `b` share, at most `max` (chunks compared as in sharedChars). */
function sharedEnd(a: string, b: string, max: number): number {
  const n = Math.min(a.length, b.length, max);
  let i = 0;
  while (
    i + CHUNK <= n &&
    a.substring(a.length - i - CHUNK, a.length - i) === b.substring(b.length - i - CHUNK, b.length - i)
  )
    i += CHUNK;
  while (i < n && a.charCodeAt(a.length - 1 - i) === b.charCodeAt(b.length - 1 - i)) i++;
  return i;
}

/**
 * What to scan of `text` when its first `head` and last `end` characters are known clean (they are a
 * clean text's first and last). A match that straddles either point is found in the overlap; a
 * private key block may be longer: one that opens or closes in the middle has the text scanned past
 * the clean part on that side.
 */
function novel(text: string, head: number, end: number): string {
  let from = head <= OVERLAP ? 0 : head - OVERLAP;
  while (from > 0 && text.charCodeAt(from - 1) === 92 /* \\: a JSON escape is taken whole */) from--;
  let to = end <= END_OVERLAP ? text.length : text.length - end + END_OVERLAP;
  if (from === 0 && to === text.length) return text;
  const middle = text.slice(from, to);
  if (from > 0 && middle.includes('-----END')) from = 0;
  if (to < text.length && middle.includes('-----BEGIN')) to = text.length;
  return text.slice(from, to);
}

/**
 * Must the bodies be redacted? `texts` are the request's and backend request's texts, `shared` what
 * they share with the chain's base (stored, hence clean), so only the rest is scanned. The backend
 * request, made from the request, is scanned only where it differs from the request once that is
 * known clean: for a chat call, where the model and sampling were rewritten.
 */
export function bodiesNeedRedaction(
  call: NewLlmCall,
  texts: { request: string; backend: string | null },
  shared: Pick<Shared, 'request' | 'backend'> | null,
): boolean {
  const { request, backend } = texts;
  if (mayHoldSecret(novel(request, shared?.request ?? 0, 0))) return true;
  if (backend !== null) {
    let head = shared?.backend ?? 0;
    let end = 0;
    // Comparing with the request costs a pass of memory compares: not worth it for a short rest.
    if (backend.length - head > COMPARE_FROM) {
      head = Math.max(head, sharedChars(request, backend));
      end = sharedEnd(request, backend, Math.min(request.length, backend.length) - head);
    }
    if (mayHoldSecret(novel(backend, head, end))) return true;
  }
  const response = jsonText(call.response);
  return response !== null && mayHoldSecret(response);
}

/** The call with its request, backend request and response redacted (as texts the store writes). */
export function redactBodies(call: NewLlmCall): NewLlmCall {
  return {
    ...call,
    request: redactJson(call.request),
    backend_request: redactJson(call.backend_request),
    response: redactJson(call.response),
  };
}
