// Tool executions a harness reports over OTLP (daemon/telemetry/ingest.ts), kept on their rollout.
// A report that repeats one already stored (an exporter's retry, the same run as a log and a span)
// is skipped by its dedupe key; a rollout keeps at most MAX_TOOL_RUNS.
import type { NewToolRun, ToolRun } from '../../protocol/entities';
import type { Row } from '../driver';
import { newId } from '../ids';
import type { SqlContext } from './context';
import { iso, json, now, numOrNull, parse, str } from './values';

/** Tool runs one rollout keeps; reports past it are dropped (and counted in the answer). */
export const MAX_TOOL_RUNS = 10_000;

const COLS =
  'id, rollout_id, dedupe, tool, call_id, started_at, duration_ms, success, result_bytes, error, source, agent, attributes, created_at';

function toToolRun(r: Row): ToolRun {
  return {
    id: String(r.id),
    rollout_id: String(r.rollout_id),
    tool: String(r.tool),
    call_id: str(r.call_id),
    started_at: iso(r.started_at),
    duration_ms: numOrNull(r.duration_ms),
    success: r.success == null ? null : Number(r.success) === 1,
    result_bytes: numOrNull(r.result_bytes),
    error: str(r.error),
    source: String(r.source),
    agent: str(r.agent),
    attributes: (parse(r.attributes) ?? {}) as Record<string, unknown>,
    created_at: iso(r.created_at),
  };
}

const dedupeOf = (t: NewToolRun) => t.call_id ?? `${t.source}\u0000${t.tool}\u0000${t.started_at}`;

/** Stores the runs not stored yet; resolves to those it stored. */
export async function addToolRuns(c: SqlContext, rolloutId: string, runs: NewToolRun[]): Promise<ToolRun[]> {
  return c.tx(async (q, emit) => {
    await c.mustExist(q, 'rollouts', rolloutId, 'rollout_id', 'rollout');
    const held = await q.get<{ n: unknown }>('SELECT COUNT(*) AS n FROM tool_runs WHERE rollout_id = ?', [
      rolloutId,
    ]);
    let room = MAX_TOOL_RUNS - Number(held?.n ?? 0);
    const stored: ToolRun[] = [];
    const createdAt = now();
    for (const t of runs) {
      if (room <= 0) break;
      const run: ToolRun = { ...t, id: newId('tool'), rollout_id: rolloutId, created_at: createdAt };
      const changed = await q.run(
        `INSERT INTO tool_runs (${COLS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (rollout_id, dedupe) DO NOTHING`,
        [
          run.id,
          rolloutId,
          dedupeOf(t),
          run.tool,
          run.call_id,
          run.started_at,
          run.duration_ms,
          run.success === null ? null : run.success ? 1 : 0,
          run.result_bytes,
          run.error,
          run.source,
          run.agent,
          json(run.attributes) ?? '{}',
          createdAt,
        ],
      );
      if (changed > 0) {
        stored.push(run);
        room--;
      }
    }
    if (stored.length > 0) emit({ type: 'tool_runs', rollout_id: rolloutId, tool_runs: stored });
    return stored;
  });
}

export async function listToolRuns(c: SqlContext, rolloutId: string): Promise<ToolRun[]> {
  return c.read(async () => {
    const rows = await c.db.all(
      `SELECT ${COLS} FROM tool_runs WHERE rollout_id = ? ORDER BY started_at, id`,
      [rolloutId],
    );
    return rows.map(toToolRun);
  });
}

/** The rollout whose key (or whose recording's key) has this SHA-256; null when none has. */
export async function rolloutOfKeyHash(c: SqlContext, hash: string): Promise<string | null> {
  return c.read(async () => {
    const own = await c.db.get<{ id: string }>('SELECT id FROM rollouts WHERE key_sha256 = ?', [hash]);
    if (own) return String(own.id);
    const rec = await c.db.get<{ rollout_id: string }>(
      'SELECT rollout_id FROM recordings WHERE key_sha256 = ?',
      [hash],
    );
    return rec ? String(rec.rollout_id) : null;
  });
}
