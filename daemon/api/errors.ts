// One error shape for every /api failure: {error: {message, field, code}} with a fitting status.
import type { FastifyError } from 'fastify';
import type { z } from 'zod';
import { errorText } from '../error-text';
import type { ErrorBody } from '../protocol/api';
import { issueField } from '../protocol/fields';
import { redactText } from '../redact';
import { StoreError } from '../store/store';

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly field: string | null = null,
  ) {
    super(message);
  }
}

/** A 400 naming the first offending field (unknown keys name the key itself). */
export function validationError(
  error: z.ZodError,
  where: string,
  prefix: readonly PropertyKey[] = [],
): ApiError {
  const described = error.issues.map((issue) => {
    const field = issueField(issue, prefix);
    return { field, text: `${field || where}: ${issue.message}` };
  });
  return new ApiError(
    400,
    'invalid_request',
    `invalid ${where}: ${described.map((d) => d.text).join('; ')}`,
    described[0]?.field || null,
  );
}

export function errorBody(err: ApiError): ErrorBody {
  return { error: { message: redactText(err.message), field: err.field, code: err.code } };
}

/**
 * The field a malformed URL is wrong in: the `:param` of a route pattern (from `patterns`, fastify
 * style) at the first segment whose percent-escapes do not decode, else `path`.
 */
export function badUrlField(url: string, patterns: Iterable<string>): string {
  const segments = url.split('?')[0].split('/');
  const at = segments.findIndex((s) => {
    try {
      decodeURIComponent(s);
      return false;
    } catch {
      return true;
    }
  });
  if (at < 0) return 'path';
  for (const pattern of patterns) {
    const parts = pattern.split('/');
    if (parts.length !== segments.length || !parts[at]?.startsWith(':')) continue;
    if (parts.every((p, i) => i === at || p.startsWith(':') || p === segments[i])) return parts[at].slice(1);
  }
  return 'path';
}

/** Fastify's errors before any route runs (a URL that does not decode, a parameter too long) → an ApiError. */
export function frameworkApiError(
  err: Partial<FastifyError>,
  url: string,
  patterns: Iterable<string>,
): ApiError {
  if (err.code === 'FST_ERR_BAD_URL') {
    const field = badUrlField(url, patterns);
    return new ApiError(400, 'invalid_url', `${field}: malformed percent-escape in the URL`, field);
  }
  if (err.code === 'FST_ERR_MAX_PARAM_LENGTH')
    return new ApiError(414, 'uri_too_long', 'a path parameter is longer than 100 characters', 'path');
  return new ApiError(400, 'invalid_request', err.message ?? 'bad request', 'path');
}

/** Any thrown value → an ApiError (store errors and fastify's own request errors keep their meaning). */
export function toApiError(err: unknown, bodyLimit: number): ApiError {
  if (err instanceof ApiError) return err;
  if (err instanceof StoreError) {
    const status = err.code === 'not_found' ? 404 : err.code === 'conflict' ? 409 : 400;
    return new ApiError(status, err.code, err.message, err.field);
  }
  const fe = err as Partial<FastifyError>;
  switch (fe.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new ApiError(
        413,
        'body_too_large',
        `request body is larger than the limit of ${bodyLimit} bytes`,
        'body',
      );
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new ApiError(
        415,
        'unsupported_media_type',
        'send the body as JSON with Content-Type: application/json',
        'body',
      );
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new ApiError(400, 'invalid_request', 'Content-Length does not match the body', 'body');
  }
  if (typeof fe.statusCode === 'number' && fe.statusCode >= 400 && fe.statusCode < 500) {
    return new ApiError(fe.statusCode, 'invalid_request', fe.message ?? 'bad request');
  }
  return new ApiError(500, 'internal', errorText(err));
}

/** The 404 for an entity that is not there, naming the field that gave its id. */
export function notFound(kind: string, id: string, field = 'id'): ApiError {
  return new ApiError(404, 'not_found', `no ${kind} with id ${JSON.stringify(id)}`, field);
}
