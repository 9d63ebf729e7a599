// The API's one route table: a route another module adds under /api by hand is refused at start.
import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import type { DaemonContext } from '../context';
import { registerApi } from './index';

describe('the API route table', () => {
  it('refuses a route added under /api outside the table (it would have no schemas and no OpenAPI entry)', async () => {
    const app = Fastify();
    const ctx = { config: { body_limit_bytes: 1024 }, log: () => {} } as unknown as DaemonContext;
    const api = await registerApi(app, ctx);
    try {
      expect(() => app.post('/api/runs/:id/claim-by-hand', async () => ({}))).toThrow(
        /not in the API route table/,
      );
      // Outside /api, and routes the table has, are left alone.
      expect(() => app.get('/metrics', async () => '')).not.toThrow();
    } finally {
      await api.close();
      await app.close();
    }
  });
});
