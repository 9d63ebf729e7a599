// GET /api/openapi.json: the OpenAPI 3.1 document generated from the route table lists every route.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { routes } from '../../daemon/api';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon';

let daemon: TestDaemon;
beforeAll(async () => {
  daemon = await startTestDaemon();
});
afterAll(async () => {
  await daemon?.close();
});

type Operation = {
  operationId: string;
  parameters: { name: string; in: string; required: boolean }[];
  requestBody?: { content: Record<string, { schema: unknown }> };
  responses: Record<string, { content?: Record<string, { schema: { $ref?: string } }> }>;
  security?: unknown[];
};

describe('OpenAPI', () => {
  it('lists every /api route (the table and those other modules add) with its parameters, body, success and error responses', async () => {
    const res = await daemon.api('GET', '/api/openapi.json');
    expect(res.status).toBe(200);
    const doc = res.body as {
      openapi: string;
      servers: { url: string }[];
      paths: Record<string, Record<string, Operation>>;
    };
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.servers[0]!.url).toBe(daemon.url);

    const listed = Object.entries(doc.paths).flatMap(([path, ops]) =>
      Object.keys(ops).map((m) => `${m.toUpperCase()} ${path}`),
    );
    const expected = routes.map((r) => `${r.method} ${r.path.replace(/:(\w+)/g, '{$1}')}`);
    expect(listed).toEqual(expect.arrayContaining(expected));
    // Whatever else the document lists (routes other modules add under /api) is a real route.
    for (const entry of listed) {
      const [method, path] = entry.split(' ') as [string, string];
      const url = path.replace(/\{(\w+)\}/g, ':$1');
      expect(daemon.app.hasRoute({ method: method as 'GET', url }), entry).toBe(true);
    }
    for (const required of [
      'GET /api/health',
      'POST /api/rollouts',
      'GET /api/rollouts/{id}',
      'POST /api/rollouts/{id}/reward',
      'POST /api/runs',
      'GET /api/runs/{id}/groups',
      'GET /api/events',
      'POST /api/recordings',
    ]) {
      expect(listed).toContain(required);
    }

    const ids = new Set<string>();
    for (const r of routes) {
      const op = doc.paths[r.path.replace(/:(\w+)/g, '{$1}')]![r.method.toLowerCase()]!;
      expect(ids.has(op.operationId), op.operationId).toBe(false);
      ids.add(op.operationId);
      if (r.path.includes(':id'))
        expect(op.parameters).toContainEqual(
          expect.objectContaining({ name: 'id', in: 'path', required: true }),
        );
      if (r.body) expect(op.requestBody?.content['application/json']?.schema).toBeTruthy();
      const success = String(r.websocket ? 101 : (r.status ?? 200));
      expect(op.responses[success], `${r.method} ${r.path}`).toBeTruthy();
      if (r.auth === 'none') expect(op.security).toEqual([]);
      else
        expect(op.responses['401']!.content!['application/json']!.schema.$ref).toBe(
          '#/components/schemas/ErrorBody',
        );
      if (r.auth === 'rollout') expect(op.responses['403']).toBeTruthy();
    }

    const rolloutsQuery = doc.paths['/api/rollouts']!.get!.parameters.map((p) => p.name);
    expect(rolloutsQuery).toEqual(
      expect.arrayContaining(['run_id', 'status', 'cursor', 'limit', 'has_reward']),
    );
    const reward = doc.paths['/api/rollouts/{id}/reward']!.post!.requestBody!.content['application/json']!
      .schema as {
      properties: Record<string, unknown>;
      required: string[];
    };
    expect(Object.keys(reward.properties)).toEqual(['value', 'source', 'detail']);
    expect(reward.required).toEqual(['value']);
  });
});
