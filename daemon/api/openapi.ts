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

/** A route registered outside the table (no schemas known; listed so the document is complete). */
export interface OtherRoute {
  method: string;
  path: string;
  summary: string | null;
}

function operationId(method: string, path: string): string {
  return `${method.toLowerCase()}${path.replace(/[^A-Za-z]+(.)?/g, (_, c: string | undefined) => (c ?? '').toUpperCase())}`;
}

export function openApiDocument(
  routes: AnyRoute[],
  version: string,
  serverUrl: string,
  others: OtherRoute[] = [],
) {
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
    };
    for (const [status, description] of Object.entries(errorStatuses)) {
      if (status === '403' && r.auth !== 'rollout') continue;
      if (status === '401' && r.auth === 'none') continue;
      if (status === '413' && !r.body) continue;
      responses[status] = { description, ...error };
    }
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
  for (const other of others) {
    const path = other.path.replace(/:([A-Za-z_]+)/g, '{$1}');
    paths[path] ??= {};
    paths[path][other.method.toLowerCase()] ??= {
      summary: other.summary ?? `${other.method} ${other.path}`,
      operationId: operationId(other.method, path),
      parameters: [...path.matchAll(/\{(\w+)\}/g)].map((m) => ({
        name: m[1],
        in: 'path',
        required: true,
        schema: { type: 'string' },
      })),
      responses: { default: { description: 'see the owning module', ...error } },
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

/** Per daemon: the /api routes other modules registered, and the document once built. */
const documents = new WeakMap<DaemonContext, { others: OtherRoute[]; document: unknown }>();

export function addOtherRoute(ctx: DaemonContext, route: OtherRoute): void {
  const entry = documents.get(ctx) ?? { others: [], document: null };
  entry.others.push(route);
  entry.document = null;
  documents.set(ctx, entry);
}

/** The daemon's OpenAPI document (built on first request; routes do not change once it listens). */
export function openApiFor(ctx: DaemonContext, routes: AnyRoute[]): unknown {
  const entry = documents.get(ctx) ?? { others: [], document: null };
  entry.document ??= openApiDocument(routes, VERSION, ctx.baseUrl(), entry.others);
  documents.set(ctx, entry);
  return entry.document;
}
