import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dropPgSchema, pgSchemaUrl, postgresProblem } from './pg-testing';
import { PostgresDriver, pgTimestampToIso } from './postgres';

describe('PostgreSQL timestamps', () => {
  it('become the same ISO strings JavaScript writes, whatever fraction PostgreSQL prints', () => {
    expect(pgTimestampToIso('2026-12-02 13:03:45.123+00')).toBe('2026-12-02T13:03:45.123Z');
    expect(pgTimestampToIso('2026-12-02 13:03:45.12+00')).toBe('2026-12-02T13:03:45.120Z');
    expect(pgTimestampToIso('2026-12-02 13:03:45+00')).toBe('2026-12-02T13:03:45.000Z');
    expect(pgTimestampToIso('2026-12-02 13:03:45.123456+00')).toBe('2026-12-02T13:03:45.123Z');
    // Another session time zone still parses correctly (through Date).
    expect(pgTimestampToIso('2026-12-02 14:03:45.5+01')).toBe('2026-12-02T13:03:45.500Z');
    const now = new Date();
    const pgText = `${now.toISOString().slice(0, 10)} ${now.toISOString().slice(11, 23)}+00`;
    expect(pgTimestampToIso(pgText)).toBe(now.toISOString());
  });
});

const pgProblem = await postgresProblem();

describe.skipIf(pgProblem !== null)('PostgreSQL scripts (parameters written as literals)', () => {
  const schema = `t_literals_${process.pid}`;
  let db: PostgresDriver;
  beforeAll(async () => {
    db = new PostgresDriver(pgSchemaUrl(schema), { max: 2 });
    await db.init();
    await db.exec('CREATE TABLE v (k integer, t text, b bytea, d double precision, i bigint)');
  });
  afterAll(async () => {
    await db.close();
    await dropPgSchema(schema);
  });

  const row = fc.record({
    // PostgreSQL text cannot hold NUL (nor can a parameter), so neither path is asked to.
    t: fc
      .oneof(
        fc.string({ unit: 'binary' }),
        fc.constantFrom("'", "''", '\\', "\\'", "'); DROP TABLE v; --", '$$', '?'),
      )
      .map((s) => s.replaceAll('\0', '')),
    b: fc.uint8Array({ maxLength: 64 }).map((a) => Buffer.from(a)),
    d: fc.double(),
    i: fc.integer(),
  });

  it('store every value exactly as the same statement with parameters does', async () => {
    let k = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(row, { minLength: 1, maxLength: 5 }), async (rows) => {
        const base = k;
        k += 2 * rows.length;
        const values = (r: (typeof rows)[number], key: number) => [key, r.t, r.b, r.d, r.i];
        const insert = `INSERT INTO v (k, t, b, d, i) VALUES ${rows.map(() => '(?, ?, ?, ?, ?)').join(', ')}`;
        await db.run(
          insert,
          rows.flatMap((r, j) => values(r, base + 2 * j)),
        );
        const back = await db.script<{ k: number }>([
          { sql: insert, params: rows.flatMap((r, j) => values(r, base + 2 * j + 1)) },
          { sql: 'SELECT k FROM v WHERE k >= ? ORDER BY k', params: [base] },
        ]);
        expect(back.map((r) => r.k)).toEqual(Array.from({ length: 2 * rows.length }, (_, j) => base + j));
        const got = await db.all<{ k: number; t: string; b: Buffer; d: number; i: number }>(
          'SELECT k, t, b, d, i FROM v WHERE k >= ? AND k < ? ORDER BY k',
          [base, k],
        );
        for (let j = 0; j < rows.length; j++) {
          const [param, literal] = [got[2 * j], got[2 * j + 1]];
          expect({ ...literal, k: 0 }).toEqual({ ...param, k: 0 });
          expect(Object.is(literal.d, param.d) || (literal.d === 0 && param.d === 0)).toBe(true);
        }
      }),
      { numRuns: 150 },
    );
  });

  it('roll back every statement of a script when one fails', async () => {
    await expect(
      db.script([
        { sql: 'INSERT INTO v (k, t) VALUES (?, ?)', params: [-1, 'kept?'] },
        { sql: 'INSERT INTO v (k, t) VALUES (?, ?)', params: ['not a number', 'x'] },
      ]),
    ).rejects.toThrow(/integer/);
    expect(await db.all('SELECT k FROM v WHERE k = -1')).toEqual([]);
    await expect(db.script([{ sql: 'SELECT ?', params: [] }])).rejects.toThrow(/0 parameters for 1/);
  });
});
