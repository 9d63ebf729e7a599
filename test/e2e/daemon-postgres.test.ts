// The daemon over the shared PostgreSQL store (`--store postgres://…`): same API, same behaviour.
// Uses HARNESS_RL_TEST_PG (scripts/start-postgres.sh); skipped with a note when it is unreachable.
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import type { CreatedRollout, RolloutDetail } from '../../daemon/protocol/api';
import { startTestDaemon } from '../helpers/daemon';

const PG_URL =
  process.env.HARNESS_RL_TEST_PG || 'postgres://harness_rl:harness_rl@127.0.0.1:5432/harness_rl_test';
const schema = `t_api_${randomBytes(6).toString('hex')}`;

async function pgProblem(): Promise<string | null> {
  const client = new pg.Client({ connectionString: PG_URL, connectionTimeoutMillis: 3000 });
  try {
    await client.connect();
    return null;
  } catch (err) {
    return (err as Error).message;
  } finally {
    await client.end().catch(() => {});
  }
}
const problem = await pgProblem();
if (problem)
  process.stderr.write(`\n  SKIPPING the daemon-on-PostgreSQL test: ${PG_URL} unreachable (${problem})\n`);

afterAll(async () => {
  if (problem) return;
  const client = new pg.Client({ connectionString: PG_URL });
  await client.connect();
  await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  await client.end();
});

describe.skipIf(problem !== null)('daemon on PostgreSQL', () => {
  it('serves health, rollouts and rewards from a postgres:// store', async () => {
    const url = new URL(PG_URL);
    url.searchParams.set('schema', schema);
    const daemon = await startTestDaemon({ store: url.toString() });
    try {
      expect((await daemon.api('GET', '/api/health')).body.store).toBe('postgres');
      const created = (await daemon.api<CreatedRollout>('POST', '/api/rollouts', { input: 'pg' })).body;
      expect(
        (await daemon.api('POST', `/api/rollouts/${created.id}/reward`, { value: 3 }, created.key)).status,
      ).toBe(201);
      expect(
        (await daemon.api('POST', `/api/rollouts/${created.id}/complete`, undefined, created.key)).status,
      ).toBe(200);
      const detail = await daemon.api<RolloutDetail>('GET', `/api/rollouts/${created.id}`);
      expect(detail.body).toMatchObject({ status: 'succeeded', reward: 3, input: 'pg' });
      expect((await daemon.api('POST', `/api/rollouts/${created.id}/complete`)).status).toBe(409);
    } finally {
      await daemon.close();
    }
  });
});
