// The OpenAPI 3.1 document, generated from the route table (the same zod schemas that validate).
import { z } from 'zod';
import { VERSION } from '../config/version';
import type { DaemonContext } from '../context';
import { ErrorBody } from '../protocol/api';
import type { AnyRoute } from './route';

function jsonSchema(schema: z.ZodType, io: 'input' | 'output'): Record<string, unknown> {
  const out = z.toJSONSchema(schema, { io, unrepresentable: 'any', target: 'draft-2020-12' }) as Record<
    string,
    unknown
  >;
  delete out.$schema;
  return out;
}

function parameters(schema: z.ZodType | undefined, where: 'path' | 'query') {
  if (!schema) return [];
  const object = jsonSchema(schema, 'input') as {
    properties?: Record<string, unknown>;
    required?: string[];
  };
  return Object.entries(object.properties ?? {}).map(([name, property]) => ({
    name,
    in: where,
    required: where === 'path' || (object.required ?? []).includes(name),
    schema: property,
  }));
}

const errorStatuses: Record<string, string> = {
  '400': 'invalid request (the field is named)',
  '401': 'missing or wrong token',
  '403': 'a rollout key used outside its rollout',
  '404': 'unknown id',
  '409': 'invalid state transition',
  '413': 'body larger than the limit',
};

function operationId(method: string, path: string): string {
  return `${method.toLowerCase()}${path.replace(/[^A-Za-z]+(.)?/g, (_, c: string | undefined) => (c ?? '').toUpperCase())}`;
}

export function openApiDocument(routes: AnyRoute[], version: string, serverUrl: string) {
  const paths: Record<string, Record<string, unknown>> = {};
  const error = { content: { 'application/json': { schema: { $ref: '#/components/schemas/ErrorBody' } } } };
  for (const r of routes) {
    const path = r.path.replace(/:([A-Za-z_]+)/g, '{$1}');
    const responses: Record<string, unknown> = {
      [String(r.websocket ? 101 : (r.status ?? 200))]: r.websocket
        ? { description: 'switching protocols; then one JSON DaemonEvent per message' }
        : {
            description: 'success',
            content: { 'application/json': { schema: jsonSchema(r.response, 'output') } },
          },
      ...(r.noContent ? { '204': { description: r.noContent } } : {}),
    };
    for (const [status, description] of Object.entries(errorStatuses)) {
      if (status === '403' && r.auth !== 'rollout' && r.auth !== 'worker') continue;
      if (status === '401' && r.auth === 'none') continue;
      if (status === '413' && !r.body) continue;
      responses[status] = { description, ...error };
    }
    for (const [status, description] of Object.entries(r.errors ?? {}))
      responses[status] = { description, ...error };
    paths[path] ??= {};
    paths[path][r.method.toLowerCase()] = {
      summary: r.summary,
      operationId: operationId(r.method, path),
      ...(r.auth === 'none' ? { security: [] } : {}),
      parameters: [...parameters(r.params, 'path'), ...parameters(r.query, 'query')],
      ...(r.body
        ? {
            requestBody: {
              required: false,
              content: { 'application/json': { schema: jsonSchema(r.body, 'input') } },
            },
          }
        : {}),
      responses,
    };
  }
  return {
    openapi: '3.1.0',
    info: { title: 'harness-rl daemon', version },
    servers: [{ url: serverUrl }],
    security: [{ bearer: [] }],
    components: {
      securitySchemes: {
        bearer: {
          type: 'http',
          scheme: 'bearer',
          description: 'the daemon token (<data>/token), or a rollout key for its own rollout',
        },
      },
      schemas: { ErrorBody: jsonSchema(ErrorBody, 'output') },
    },
    paths,
  };
}

/** Per daemon: the document, built on first request (routes do not change once it listens). */
const documents = new WeakMap<DaemonContext, unknown>();

export function openApiFor(ctx: DaemonContext, routes: AnyRoute[]): unknown {
  let document = documents.get(ctx);
  if (document === undefined) {
    document = openApiDocument(routes, VERSION, ctx.baseUrl());
    documents.set(ctx, document);
  }
  return document;
}
