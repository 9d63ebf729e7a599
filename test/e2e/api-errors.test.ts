// Bad input never crashes the daemon and never changes the store: every case gets one clear 4xx error body.
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CreatedRollout, ErrorBody } from '../../daemon/protocol/api';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon';

const LIMIT = 4096;
let daemon: TestDaemon;
let rollout: CreatedRollout;
let finished: CreatedRollout;

beforeAll(async () => {
  daemon = await startTestDaemon({ bodyLimitBytes: LIMIT });
  rollout = (await daemon.api<CreatedRollout>('POST', '/api/rollouts', { input: 'x' })).body;
  finished = (await daemon.api<CreatedRollout>('POST', '/api/rollouts', {})).body;
  await daemon.api('POST', `/api/rollouts/${finished.id}/complete`);
});
afterAll(async () => {
  await daemon?.close();
});

/** Everything the API can show, to compare before and after the rejected requests. */
async function snapshot() {
  const rollouts = await daemon.api('GET', '/api/rollouts?limit=1000');
  const details = await Promise.all(
    rollouts.body.items.map(
      async (r: { id: string }) => (await daemon.api('GET', `/api/rollouts/${r.id}`)).body,
    ),
  );
  return {
    details,
    runs: (await daemon.api('GET', '/api/runs')).body,
    recordings: (await daemon.api('GET', '/api/recordings')).body,
  };
}

async function raw(method: string, path: string, body: string | undefined, contentType = 'application/json') {
  const res = await fetch(`${daemon.url}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${daemon.token}`,
      ...(body === undefined ? {} : { 'content-type': contentType }),
    },
    body,
  });
  return { status: res.status, body: (await res.json()) as ErrorBody };
}

describe('bad input', () => {
  it('each bad request gets its status, code and field, and the store is unchanged afterwards', async () => {
    const before = await snapshot();
    const cases: {
      name: string;
      send: () => Promise<{ status: number; body: ErrorBody }>;
      status: number;
      code: string;
      field?: string | null;
      message?: RegExp;
    }[] = [
      {
        name: 'malformed JSON',
        send: () => raw('POST', `/api/rollouts/${rollout.id}/reward`, '{"value": 1,'),
        status: 400,
        code: 'invalid_json',
        field: 'body',
        message: /malformed JSON/,
      },
      {
        name: 'wrong type',
        send: () => daemon.api('POST', `/api/rollouts/${rollout.id}/reward`, { value: 'high' }),
        status: 400,
        code: 'invalid_request',
        field: 'value',
        message: /value/,
      },
      {
        name: 'missing field',
        send: () => daemon.api('POST', `/api/rollouts/${rollout.id}/fail`, {}),
        status: 400,
        code: 'invalid_request',
        field: 'error',
      },
      {
        name: 'unknown field',
        send: () => daemon.api('POST', '/api/rollouts', { input: 1, colour: 'red' }),
        status: 400,
        code: 'invalid_request',
        field: 'colour',
      },
      {
        name: 'a non-object body',
        send: () => daemon.api('POST', '/api/rollouts', '[1,2]'),
        status: 400,
        code: 'invalid_request',
      },
      {
        name: 'bad query value',
        send: () => daemon.api('GET', '/api/rollouts?limit=0'),
        status: 400,
        code: 'invalid_request',
        field: 'limit',
      },
      {
        name: 'unknown query parameter',
        send: () => daemon.api('GET', '/api/rollouts?colour=red'),
        status: 400,
        code: 'invalid_request',
        field: 'colour',
      },
      {
        name: 'bad status filter',
        send: () => daemon.api('GET', '/api/rollouts?status=sleeping'),
        status: 400,
        code: 'invalid_request',
        field: 'status',
      },
      {
        name: 'unknown rollout',
        send: () => daemon.api('POST', '/api/rollouts/ro_missing/reward', { value: 1 }),
        status: 404,
        code: 'not_found',
        field: 'id',
        message: /ro_missing/,
      },
      {
        name: 'unknown run',
        send: () => daemon.api('GET', '/api/runs/run_missing'),
        status: 404,
        code: 'not_found',
        message: /run_missing/,
      },
      {
        name: 'unknown group',
        send: () => daemon.api('GET', '/api/groups/grp_missing'),
        status: 404,
        code: 'not_found',
        message: /grp_missing/,
      },
      {
        name: 'unknown llm call',
        send: () => daemon.api('GET', '/api/llm-calls/call_missing'),
        status: 404,
        code: 'not_found',
        message: /call_missing/,
      },
      {
        name: 'unknown recording',
        send: () => daemon.api('POST', '/api/recordings/rec_missing/stop'),
        status: 404,
        code: 'not_found',
        message: /rec_missing/,
      },
      {
        name: 'unknown route',
        send: () => daemon.api('GET', '/api/nothing-here'),
        status: 404,
        code: 'not_found',
      },
      {
        name: 'invalid transition',
        send: () => daemon.api('POST', `/api/rollouts/${finished.id}/complete`),
        status: 409,
        code: 'conflict',
      },
      {
        name: 'cancelling a finished rollout',
        send: () => daemon.api('POST', `/api/rollouts/${finished.id}/cancel`),
        status: 409,
        code: 'conflict',
      },
      {
        name: 'oversize body',
        send: () =>
          daemon.api('POST', `/api/rollouts/${rollout.id}/reward`, {
            value: 1,
            detail: 'x'.repeat(LIMIT * 2),
          }),
        status: 413,
        code: 'body_too_large',
        message: new RegExp(`${LIMIT} bytes`),
      },
      {
        name: 'not JSON',
        send: () => raw('POST', '/api/rollouts', 'input=1', 'application/x-www-form-urlencoded'),
        status: 415,
        code: 'unsupported_media_type',
      },
      {
        name: 'a bad run config',
        send: () =>
          daemon.api('POST', '/api/runs', {
            config: { name: 'r', tasks: { file: 't.jsonl' }, algorithm: { n: 0 } },
          }),
        status: 400,
        code: 'invalid_request',
        field: 'config.algorithm.n',
      },
      {
        name: 'a run whose tasks file is missing',
        send: () =>
          daemon.api('POST', '/api/runs', { config: { name: 'r', tasks: { file: '/nonexistent/t.jsonl' } } }),
        status: 400,
        code: 'invalid_tasks',
        field: 'config.tasks.file',
        message: /no such file/,
      },
    ];
    for (const c of cases) {
      const res = await c.send();
      expect(res.status, c.name).toBe(c.status);
      expect(res.body.error.code, c.name).toBe(c.code);
      expect(typeof res.body.error.message, c.name).toBe('string');
      if (c.field !== undefined) expect(res.body.error.field, c.name).toBe(c.field);
      if (c.message) expect(res.body.error.message, c.name).toMatch(c.message);
    }
    expect((await daemon.api('GET', '/api/health')).status).toBe(200);
    expect(await snapshot()).toEqual(before);
  });

  it('a body just under the limit is accepted', async () => {
    const detail = 'y'.repeat(LIMIT - 100);
    const res = await daemon.api('POST', `/api/rollouts/${rollout.id}/reward`, { value: 2, detail });
    expect(res.status).toBe(201);
  });
});

describe('arbitrary input', () => {
  it('random bodies, ids and raw bytes on every route get an answer below 500, and the daemon keeps serving', async () => {
    const targets = [
      (id: string) => `/api/rollouts/${id}/reward`,
      (id: string) => `/api/rollouts/${id}/fail`,
      (id: string) => `/api/rollouts/${id}/complete`,
      (id: string) => `/api/runs/${id}/stop`,
      (id: string) => `/api/recordings/${id}/stop`,
      () => '/api/runs',
      () => '/api/recordings',
    ];
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 0, max: targets.length - 1 }),
        fc.string({ maxLength: 30 }),
        fc.oneof(
          fc.jsonValue().map((v) => JSON.stringify(v)),
          fc.string({ maxLength: 200 }),
        ),
        async (which, id, body) => {
          const path = targets[which]!(encodeURIComponent(id || 'x'));
          const res = await fetch(`${daemon.url}${path}`, {
            method: 'POST',
            headers: { authorization: `Bearer ${daemon.token}`, 'content-type': 'application/json' },
            body,
          });
          expect(res.status).toBeLessThan(500);
          if (res.status >= 400) expect(((await res.json()) as ErrorBody).error.message).toBeTruthy();
          else await res.arrayBuffer();
        },
      ),
      { numRuns: 150 },
    );
    expect((await daemon.api('GET', '/api/health')).status).toBe(200);
  });
});
