// GET /api/openapi.json: the OpenAPI 3.1 document generated from the route table lists every route,
// the worker routes (claim, heartbeat, output, finish) among them with their protocol/worker.ts schemas.
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
  it('lists every /api route with its parameters, body, success and error responses', async () => {
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
    // The document lists the table and nothing else, and each entry is a real route.
    expect(listed.length).toBe(expected.length);
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
      'POST /api/runs/{id}/claim',
      'POST /api/attempts/{id}/heartbeat',
      'POST /api/attempts/{id}/output',
      'POST /api/attempts/{id}/finish',
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

  it('documents the worker routes with their bodies and answers, the claim with its 204 and 410', async () => {
    const doc = (await daemon.api('GET', '/api/openapi.json')).body as {
      paths: Record<
        string,
        Record<string, Operation & { responses: Record<string, { description: string }> }>
      >;
    };
    type Schema = { properties: Record<string, unknown>; required?: string[] };
    const body = (op: Operation) => op.requestBody!.content['application/json']!.schema as Schema;
    const answer = (op: Operation, status: string) =>
      op.responses[status]!.content!['application/json']!.schema as unknown as Schema;

    const claim = doc.paths['/api/runs/{id}/claim']!.post!;
    expect(Object.keys(body(claim).properties)).toEqual(['worker', 'wait_ms']);
    expect(answer(claim, '200').required).toEqual(
      expect.arrayContaining(['rollout', 'attempt', 'key', 'openai_base_url', 'heartbeat_s']),
    );
    expect(claim.responses['204']!.description).toMatch(/wait_ms/);
    expect(claim.responses['204']!.content).toBeUndefined();
    expect(claim.responses['410']!.description).toMatch(/over/);
    expect(claim.parameters).toContainEqual(expect.objectContaining({ name: 'id', in: 'path' }));

    const heartbeat = doc.paths['/api/attempts/{id}/heartbeat']!.post!;
    expect(Object.keys(body(heartbeat).properties)).toEqual(['rollout_id']);
    expect(answer(heartbeat, '200').required).toEqual(['status', 'cancel']);
    const output = doc.paths['/api/attempts/{id}/output']!.post!;
    expect(body(output).required).toEqual(['chunk']);
    expect(answer(output, '200').required).toEqual(['ok']);
    const finish = doc.paths['/api/attempts/{id}/finish']!.post!;
    expect(Object.keys(body(finish).properties)).toEqual(
      expect.arrayContaining(['status', 'reward', 'reward_source', 'failure', 'rollout_id']),
    );
    expect(answer(finish, '200').required).toEqual(['rollout']);
    for (const op of [claim, heartbeat, output, finish]) expect(op.responses['401']).toBeTruthy();
  });
});
