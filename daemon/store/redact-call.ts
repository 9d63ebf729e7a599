// A call's fields through the one redactor before they are written. The bodies are scanned only where
// they differ from the chain's base (stored, hence already clean): an agent's call resends its history,
// so the scan costs what the call adds, not what it repeats.
import type { NewLlmCall } from '../protocol/entities';
import { mayHoldSecret, redactJson, redactText, redactValue } from '../redact';
import { jsonText } from './json-text';
import type { ChainLink } from './sql/call-chain';
import { sharedChars } from './sql/call-chain';

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
 * Must the bodies be redacted? `request`/`backend` are their texts, `link` the call's place in its chain
 * (what it shares with a base that is stored clean).
 */
export function bodiesNeedRedaction(
  call: NewLlmCall,
  texts: { request: string; backend: string | null },
  link: ChainLink | null,
): boolean {
  const { request, backend } = texts;
  if (mayHoldSecret(tail(request, link?.requestShared ?? 0))) return true;
  if (backend !== null) {
    // The request is clean by now, so whatever the backend request shares with it is too.
    const shared = Math.max(link?.backendShared ?? 0, sharedChars(request, backend));
    if (mayHoldSecret(tail(backend, shared))) return true;
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
