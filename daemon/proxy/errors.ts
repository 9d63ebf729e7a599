// Errors as each wire API's clients expect them: OpenAI `{error:{message,type,param,code}}`,
// Anthropic `{type:'error', error:{type, message}}` (and as SSE frames mid-stream).
import type { z } from 'zod';
import { fieldPath, issueField } from '../protocol/fields';
import { redactText } from '../redact';
import { type Json, parseBackendJson } from './json';

export type ErrorWire = 'openai' | 'anthropic';

export class ProxyError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly param: string | null = null,
    readonly code: string | null = null,
    /** Seconds for a Retry-After header (429/503 the client may retry). */
    readonly retryAfterS: number | null = null,
  ) {
    super(message);
  }
}

/** A 400 that names the first offending field of a request body. */
export function invalidBody(error: z.ZodError): ProxyError {
  const issue = error.issues[0];
  const field = (issue && issueField(issue)) || null;
  const message = `invalid request body: ${error.issues
    .slice(0, 5)
    .map((i) => `${fieldPath(i.path) || 'body'}: ${i.message}`)
    .join('; ')}`;
  return new ProxyError(400, message, field, 'invalid_request');
}

const openaiTypes: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  403: 'permission_error',
  404: 'not_found_error',
  409: 'conflict_error',
  413: 'invalid_request_error',
  429: 'rate_limit_error',
  501: 'not_implemented_error',
};
const anthropicTypes: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  403: 'permission_error',
  404: 'not_found_error',
  409: 'invalid_request_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
  529: 'overloaded_error',
};

export function openaiErrorBody(
  status: number,
  message: string,
  param: string | null = null,
  code: string | null = null,
) {
  return {
    error: {
      message,
      type: openaiTypes[status] ?? (status >= 500 ? 'server_error' : 'invalid_request_error'),
      param,
      code,
    },
  };
}

export function anthropicErrorBody(status: number, message: string) {
  return {
    type: 'error',
    error: {
      type: anthropicTypes[status] ?? (status >= 500 ? 'api_error' : 'invalid_request_error'),
      message,
    },
  };
}

export function errorBody(wire: ErrorWire, err: ProxyError): unknown {
  const message = redactText(err.message);
  return wire === 'anthropic'
    ? anthropicErrorBody(err.status, message)
    : openaiErrorBody(err.status, message, err.param, err.code);
}

/** The error wire a URL's clients speak: Anthropic for …/v1/messages, OpenAI otherwise. */
export function wireOfUrl(url: string): ErrorWire {
  return /\/v1\/messages(\/|\?|$)/.test(url) ? 'anthropic' : 'openai';
}

/**
 * Message of a backend error body (vLLM `{message}`, OpenAI `{error:{message}}`, or raw text); `json`:
 * the body already parsed (null: not JSON).
 */
export function backendErrorMessage(text: string, json?: Json | null): string {
  try {
    const j = json === undefined ? parseBackendJson(text) : json;
    const m = j?.error?.message ?? j?.message ?? j?.detail ?? j?.error;
    if (typeof m === 'string') return m;
    if (m != null) return JSON.stringify(m).slice(0, 1000);
  } catch {
    // not JSON
  }
  return text.slice(0, 1000) || '(empty body)';
}

/**
 * Why a backend's whole answer (`json` parsed from `text`) is no answer for the harness; null when it
 * is one. vLLM answers a stream request with an event stream, JSON only for errors (>= 400) and for
 * requests without `stream` (vllm/entrypoints/openai/chat_completion/api_router.py:69-82): a 200 JSON
 * answer means the backend ignored `stream`. The harness asked for events and its client cannot read
 * JSON there, so it is a 502 rather than an answer in the wrong shape.
 */
export function wholeAnswerError(
  backend: string,
  res: { status: number; contentType: string | undefined; streamed: boolean },
  text: string,
  json: Json | null,
): ProxyError | null {
  if (res.status >= 400) {
    const message = `backend ${backend} answered ${res.status}: ${backendErrorMessage(text, json)}`;
    return new ProxyError(res.status >= 500 ? 502 : res.status, message, null, 'backend_error');
  }
  if (res.streamed)
    return new ProxyError(
      502,
      `backend ${backend} answered ${res.contentType ?? 'no content type'} instead of an event stream to a streamed request: ${text.slice(0, 200)}`,
      null,
      'backend_not_streamed',
    );
  if (!json || typeof json !== 'object' || !Array.isArray(json.choices))
    return new ProxyError(
      502,
      `backend ${backend} returned a response that is not a completion: ${text.slice(0, 200)}`,
      null,
      'backend_garbage',
    );
  return null;
}
