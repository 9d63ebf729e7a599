// JSON bodies the REST API must refuse before anything walks them: `null` (which used to pass as {})
// and bodies nested deeper than MAX_JSON_DEPTH; each is a 400 naming the body, on every route.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CreatedRollout } from '../../daemon/protocol/api';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon';

let daemon: TestDaemon;
let rollout: CreatedRollout;

beforeAll(async () => {
  daemon = await startTestDaemon();
  rollout = (await daemon.api<CreatedRollout>('POST', '/api/rollouts', { input: 'x' })).body;
});
afterAll(async () => {
  await daemon?.close();
});

async function send(path: string, body: string) {
  const res = await fetch(`${daemon.url}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${daemon.token}`, 'content-type': 'application/json' },
    body,
  });
  return { status: res.status, body: (await res.json()) as any };
}

describe('null and deeply nested bodies', () => {
  it('a JSON null body is a 400 naming the body on the API and worker routes, and changes nothing', async () => {
    const before = (await daemon.api('GET', '/api/rollouts?limit=1000')).body.items.length;
    for (const path of [
      '/api/rollouts',
      '/api/recordings',
      `/api/rollouts/${rollout.id}/complete`,
      `/api/rollouts/${rollout.id}/reward`,
      '/api/runs/run_nope/claim',
    ]) {
      const res = await send(path, 'null');
      expect(res.status, path).toBe(400);
      expect(res.body.error, path).toMatchObject({ field: 'body', code: 'invalid_request' });
      expect(res.body.error.message, path).toMatch(/not null/);
    }
    expect((await daemon.api('GET', '/api/rollouts?limit=1000')).body.items.length).toBe(before);
    expect((await daemon.api('GET', `/api/rollouts/${rollout.id}`)).body.status).toBe('running');
    expect((await daemon.api('GET', '/api/recordings')).body).toHaveLength(0);
  });

  it('a body nested 10,000 levels deep is a 400 naming the body, not a stack overflow', async () => {
    const deep = `${'['.repeat(10_000)}${']'.repeat(10_000)}`;
    const hidden = `{"input": ${deep.replace(/\[/, '[{"__proto__": 1}, ')}}`;
    for (const [path, body] of [
      ['/api/rollouts', deep],
      ['/api/rollouts', hidden],
      [`/api/rollouts/${rollout.id}/reward`, `{"value": 1, "details": ${deep}}`],
      ['/api/runs/run_nope/claim', deep],
    ]) {
      const res = await send(path, body);
      expect(res.status, path).toBe(400);
      expect(res.body.error, path).toMatchObject({ field: 'body', code: 'invalid_request' });
      expect(res.body.error.message).toMatch(/deeper than 128 levels/);
    }
    // A body just within the bound is taken (a rollout input may be any JSON).
    const ok = await send('/api/rollouts', `{"input": ${'['.repeat(127)}${']'.repeat(127)}}`);
    expect(ok.status).toBe(201);
  });
});
