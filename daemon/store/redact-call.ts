// A call's fields through the one redactor before they are written. The bodies are scanned only where
// they differ from the chain's base (stored, hence already clean): an agent's call resends its history,
// so the scan costs what the call adds, not what it repeats.
import type { NewLlmCall } from '../protocol/entities';
import { mayHoldSecret, redactJson, redactText, redactValue } from '../redact';
import { jsonText } from './json-text';
import type { Shared } from './sql/call-chain';

/** Characters before the end of a shared prefix scanned again: a key that straddles it is found. */
const OVERLAP = 256;

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

/**
 * What to scan of `text` when its first `shared` characters are known clean. A private key block may
 * be longer than OVERLAP: one that ends past that point has the whole text scanned.
 */
function tail(text: string, shared: number): string {
  if (shared <= OVERLAP) return text;
  const rest = text.slice(shared - OVERLAP);
  return rest.includes('-----END') ? text : rest;
}

/**
 * Must the bodies be redacted? `texts` are the request's and backend request's texts, `shared` what
 * they share with the chain's base (stored, hence clean), so only the rest is scanned.
 */
export function bodiesNeedRedaction(
  call: NewLlmCall,
  texts: { request: string; backend: string | null },
  shared: Pick<Shared, 'request' | 'backend'> | null,
): boolean {
  if (mayHoldSecret(tail(texts.request, shared?.request ?? 0))) return true;
  if (texts.backend !== null && mayHoldSecret(tail(texts.backend, shared?.backend ?? 0))) return true;
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
