import { describe, expect, it } from 'vitest';
import { pgTimestampToIso } from './postgres';

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
