// A call's fields through the one redactor before they are written. The bodies are scanned only where
// they differ from the chain's base (stored, hence already clean): an agent's call resends its history,
// so the scan costs what the call adds, not what it repeats.
import type { NewLlmCall } from '../protocol/entities';
import { mayHoldSecret, redactJson, redactText, redactValue } from '../redact';
import { jsonText } from './json-text';
import type { Shared } from './sql/call-chain';

/** Characters before the end of a shared prefix scanned again: a key that straddles it is found. */
const OVERLAP = 512;

const orNull = <T>(s: T): T => (typeof s === 'string' ? (redactText(s) as T) : s);

/** The call with every small text field redacted (the bodies are left to redactBodies). */
export function redactFields(call: NewLlmCall): NewLlmCall {
  return {
    ...call,
    bridge: call.bridge == null ? call.bridge : redactValue(call.bridge),
    error: orNull(call.error),
    backend: orNull(call.backend),
    model: orNull(call.model),
    finish_reason: orNull(call.finish_reason),
    usage: call.usage == null ? call.usage : redactValue(call.usage),
    tags: call.tags == null ? call.tags : redactValue(call.tags),
  };
}

const tail = (text: string, shared: number) => (shared > OVERLAP ? text.slice(shared - OVERLAP) : text);

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
