// The daemon over the shared PostgreSQL store (`--store postgres://…`): same API, same behaviour.
// Uses HARNESS_RL_TEST_PG (scripts/start-postgres.sh); skipped with a note when it is unreachable.
import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import type { CreatedRollout, RolloutDetail } from '../../daemon/protocol/api';
import { dropPgSchema, PG_SHOWN, pgSchemaUrl, postgresProblem } from '../../daemon/store/pg-testing';
import { startTestDaemon } from '../helpers/daemon';

const schema = `t_api_${randomBytes(6).toString('hex')}`;

const problem = await postgresProblem();
if (problem)
  process.stderr.write(`\n  SKIPPING the daemon-on-PostgreSQL test: ${PG_SHOWN} unreachable (${problem})\n`);

afterAll(async () => {
  if (problem) return;
  await dropPgSchema(schema);
});

describe.skipIf(problem !== null)('daemon on PostgreSQL', () => {
  it('serves health, rollouts and rewards from a postgres:// store', async () => {
    const daemon = await startTestDaemon({ store: pgSchemaUrl(schema) });
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
