// Versioned schema migrations, one ordered list for both dialects (column types are filled in per
// dialect). openStore applies the missing ones in one transaction and records them in schema_migrations.
// Append new migrations at the end; never edit one that has shipped.
import type { Driver, Queryable } from './driver';
import { keyHash } from './ids';

export interface Migration {
  version: number;
  name: string;
  /** SQL for both dialects ({JSON}, {BLOB}, {TS}, {REAL}, {INT} are filled in), or one per dialect. */
  up: string | Record<Dialect, string>;
  /** Row changes SQL cannot express in a dialect (SQLite has no sha256), run after `up`, same transaction. */
  data?: Partial<Record<Dialect, (q: Queryable) => Promise<void>>>;
}

type Dialect = Driver['dialect'];
const TYPES: Record<Dialect, Record<string, string>> = {
  sqlite: { JSON: 'TEXT', BLOB: 'BLOB', TS: 'TEXT', REAL: 'REAL', INT: 'INTEGER' },
  postgres: { JSON: 'json', BLOB: 'bytea', TS: 'timestamptz', REAL: 'double precision', INT: 'integer' },
};

const MIGRATIONS: Migration[] = [
  {
    version: 1,
    name: 'trace store tables',
    up: `
CREATE TABLE runs (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  status TEXT NOT NULL,
  config {JSON} NOT NULL,
  step {INT} NOT NULL DEFAULT 0,
  model_version {INT} NOT NULL DEFAULT 0,
  error TEXT,
  created_at {TS} NOT NULL,
  updated_at {TS} NOT NULL
);
CREATE TABLE run_metrics (
  run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  step {INT} NOT NULL,
  metrics {JSON} NOT NULL,
  created_at {TS} NOT NULL,
  PRIMARY KEY (run_id, step)
);
CREATE TABLE tasks (
  id TEXT PRIMARY KEY,
  run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  idx {INT} NOT NULL,
  split TEXT NOT NULL,
  input {JSON},
  UNIQUE (run_id, idx)
);
CREATE TABLE rollout_groups (
  id TEXT PRIMARY KEY,
  run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  task_id TEXT REFERENCES tasks(id),
  step {INT} NOT NULL,
  size {INT} NOT NULL,
  status TEXT NOT NULL,
  created_at {TS} NOT NULL
);
CREATE INDEX rollout_groups_run ON rollout_groups (run_id, id);
CREATE TABLE recordings (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  status TEXT NOT NULL,
  upstream {JSON},
  rollout_id TEXT NOT NULL,
  key TEXT NOT NULL,
  created_at {TS} NOT NULL,
  stopped_at {TS}
);
CREATE INDEX recordings_status ON recordings (status, id);
CREATE TABLE rollouts (
  id TEXT PRIMARY KEY,
  kind TEXT NOT NULL,
  run_id TEXT REFERENCES runs(id) ON DELETE CASCADE,
  group_id TEXT REFERENCES rollout_groups(id) ON DELETE CASCADE,
  task_id TEXT REFERENCES tasks(id),
  recording_id TEXT REFERENCES recordings(id),
  input {JSON},
  status TEXT NOT NULL,
  attempt_count {INT} NOT NULL DEFAULT 0,
  max_attempts {INT} NOT NULL DEFAULT 1,
  reward {REAL},
  error TEXT,
  stats {JSON},
  key TEXT NOT NULL,
  call_count {INT} NOT NULL DEFAULT 0,
  created_at {TS} NOT NULL,
  updated_at {TS} NOT NULL,
  started_at {TS},
  finished_at {TS}
);
CREATE INDEX rollouts_run ON rollouts (run_id, id);
CREATE INDEX rollouts_group ON rollouts (group_id, id);
CREATE TABLE attempts (
  id TEXT PRIMARY KEY,
  rollout_id TEXT NOT NULL REFERENCES rollouts(id) ON DELETE CASCADE,
  idx {INT} NOT NULL,
  status TEXT NOT NULL,
  worker TEXT,
  error TEXT,
  started_at {TS} NOT NULL,
  heartbeat_at {TS} NOT NULL,
  finished_at {TS},
  UNIQUE (rollout_id, idx)
);
CREATE INDEX attempts_running ON attempts (status, heartbeat_at);
CREATE TABLE llm_calls (
  id TEXT PRIMARY KEY,
  rollout_id TEXT REFERENCES rollouts(id) ON DELETE CASCADE,
  attempt_id TEXT REFERENCES attempts(id) ON DELETE CASCADE,
  recording_id TEXT REFERENCES recordings(id) ON DELETE CASCADE,
  seq {INT} NOT NULL,
  wire_api TEXT NOT NULL,
  stream {INT} NOT NULL,
  request {JSON} NOT NULL,
  backend_request {JSON},
  response {JSON},
  prompt_ids {BLOB},
  response_ids {BLOB},
  response_logprobs {BLOB},
  token_source TEXT NOT NULL,
  bridge {JSON},
  finish_reason TEXT,
  usage {JSON},
  model TEXT,
  model_version {INT},
  backend TEXT,
  status TEXT NOT NULL,
  error TEXT,
  http_status {INT},
  tags {JSON} NOT NULL,
  queue_ms {REAL},
  ttft_ms {REAL},
  total_ms {REAL},
  created_at {TS} NOT NULL
);
CREATE INDEX llm_calls_rollout ON llm_calls (rollout_id, seq);
CREATE INDEX llm_calls_recording ON llm_calls (recording_id, seq);
CREATE TABLE rewards (
  id TEXT PRIMARY KEY,
  rollout_id TEXT NOT NULL REFERENCES rollouts(id) ON DELETE CASCADE,
  value {REAL} NOT NULL,
  source TEXT NOT NULL,
  detail {JSON},
  created_at {TS} NOT NULL
);
CREATE INDEX rewards_rollout ON rewards (rollout_id, id);
CREATE TABLE prefix_breaks (
  rollout_id TEXT NOT NULL REFERENCES rollouts(id) ON DELETE CASCADE,
  idx {INT} NOT NULL,
  data {JSON} NOT NULL,
  PRIMARY KEY (rollout_id, idx)
);
CREATE TABLE model_versions (
  id TEXT PRIMARY KEY,
  run_id TEXT REFERENCES runs(id) ON DELETE CASCADE,
  version {INT} NOT NULL,
  path TEXT,
  metrics {JSON},
  created_at {TS} NOT NULL
);
CREATE UNIQUE INDEX model_versions_run_version ON model_versions ((COALESCE(run_id, '')), version);
CREATE TABLE nodes (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  kind TEXT NOT NULL,
  url TEXT NOT NULL,
  status TEXT NOT NULL,
  model_version {INT},
  detail {JSON},
  last_seen_at {TS} NOT NULL
)`,
  },
  {
    // Listing a run's rollouts filtered by status (the dashboard, p99 < 20 ms at 100k rollouts) and
    // claiming the oldest queued rollout need (run_id, status, id) and (status, id).
    version: 2,
    name: 'rollout status indexes for filtered paging and claims',
    up: `
CREATE INDEX rollouts_run_status ON rollouts (run_id, status, id);
CREATE INDEX rollouts_status ON rollouts (status, id)`,
  },
  {
    // Most calls belong to no recording: index only those that do, so recording a call writes one
    // index page less. Token blobs are dense int32/float64 arrays that pglz barely shrinks:
    // compressing them on every write and inflating them on every read costs more CPU than the disk
    // it saves (PostgreSQL only; SQLite never compresses).
    version: 3,
    name: 'llm call storage: partial recording index, uncompressed token blobs (PostgreSQL)',
    up: {
      sqlite: `
DROP INDEX llm_calls_recording;
CREATE INDEX llm_calls_recording ON llm_calls (recording_id, seq) WHERE recording_id IS NOT NULL`,
      postgres: `
DROP INDEX llm_calls_recording;
CREATE INDEX llm_calls_recording ON llm_calls (recording_id, seq) WHERE recording_id IS NOT NULL;
ALTER TABLE llm_calls ALTER COLUMN prompt_ids SET STORAGE EXTERNAL;
ALTER TABLE llm_calls ALTER COLUMN response_ids SET STORAGE EXTERNAL;
ALTER TABLE llm_calls ALTER COLUMN response_logprobs SET STORAGE EXTERNAL`,
    },
  },
  {
    // Keys were stored as they were handed out, so a copy of the database granted every rollout.
    // Now only their SHA-256 is kept (ids.ts keyHash); existing keys are hashed in place and keep
    // working.
    version: 4,
    name: 'rollout and recording keys stored as SHA-256 hashes',
    up: {
      sqlite: `
ALTER TABLE rollouts RENAME COLUMN key TO key_sha256;
ALTER TABLE recordings RENAME COLUMN key TO key_sha256`,
      postgres: `
ALTER TABLE rollouts RENAME COLUMN key TO key_sha256;
ALTER TABLE recordings RENAME COLUMN key TO key_sha256;
UPDATE rollouts SET key_sha256 = encode(sha256(convert_to(key_sha256, 'UTF8')), 'hex');
UPDATE recordings SET key_sha256 = encode(sha256(convert_to(key_sha256, 'UTF8')), 'hex')`,
    },
    data: {
      sqlite: async (q) => {
        for (const table of ['rollouts', 'recordings']) {
          const rows = await q.all<{ id: string; key_sha256: string }>(`SELECT id, key_sha256 FROM ${table}`);
          for (const r of rows)
            await q.run(`UPDATE ${table} SET key_sha256 = ? WHERE id = ?`, [keyHash(r.key_sha256), r.id]);
        }
      },
    },
  },
  {
    // The daemon runs a run's harness command itself, in the run config's folder, also after a restart.
    version: 5,
    name: "runs keep their config's folder (base_dir)",
    up: 'ALTER TABLE runs ADD COLUMN base_dir TEXT',
  },
  {
    // A standalone rollout or a recording may turn the token-in-token-out bridge off (null: on).
    version: 6,
    name: 'rollouts keep their token bridge choice (tito)',
    up: 'ALTER TABLE rollouts ADD COLUMN tito {INT}',
  },
  {
    // An agent's call repeats the last one: its prompt ids and request text are stored as the rest
    // after that call's, and the backend request as the rest after its own request or after that
    // call's backend request (sql/call-chain.ts), so a rollout's storage grows with its turns, not
    // with their square.
    version: 7,
    name: 'llm calls store what repeats an earlier call as the rest after it',
    up: `
ALTER TABLE llm_calls ADD COLUMN base_call TEXT;
ALTER TABLE llm_calls ADD COLUMN prompt_shared {INT};
ALTER TABLE llm_calls ADD COLUMN request_shared {INT};
ALTER TABLE llm_calls ADD COLUMN request_rest TEXT;
ALTER TABLE llm_calls ADD COLUMN backend_shared {INT};
ALTER TABLE llm_calls ADD COLUMN backend_rest TEXT;
ALTER TABLE llm_calls ADD COLUMN backend_from_base {INT}`,
  },
  {
    // The sampling parameters each call's backend got (training rollouts: the run's, not the harness's).
    version: 8,
    name: 'llm calls keep their sampling parameters',
    up: 'ALTER TABLE llm_calls ADD COLUMN sampling {JSON}',
  },
  {
    // A step's train/inference agreement with its scatter (StepValidation, up to 512 pairs): its scalars
    // are also in run_metrics; the whole is read one step at a time, so the metrics stay small.
    version: 10,
    name: "each step's train/inference agreement (step_validations)",
    up: `
CREATE TABLE step_validations (
  run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  step {INT} NOT NULL,
  validation {JSON} NOT NULL,
  PRIMARY KEY (run_id, step)
)`,
  },
  {
    // Tool executions a harness reports over OTLP (daemon/telemetry/ingest.ts), on their rollout.
    // `dedupe` (the tool call id, else source + tool + start) makes an exporter's retry a no-op.
    // rollouts_key: an unscoped report finds its rollout by the key it presents.
    version: 11,
    name: 'tool runs the harness reports over OTLP (tool_runs)',
    up: `
CREATE TABLE tool_runs (
  id TEXT PRIMARY KEY,
  rollout_id TEXT NOT NULL REFERENCES rollouts(id) ON DELETE CASCADE,
  dedupe TEXT NOT NULL,
  tool TEXT NOT NULL,
  call_id TEXT,
  started_at {TS} NOT NULL,
  duration_ms {REAL},
  success {INT},
  result_bytes {INT},
  error TEXT,
  source TEXT NOT NULL,
  agent TEXT,
  attributes {JSON} NOT NULL,
  created_at {TS} NOT NULL
);
CREATE UNIQUE INDEX tool_runs_dedupe ON tool_runs (rollout_id, dedupe);
CREATE INDEX tool_runs_rollout ON tool_runs (rollout_id, started_at);
CREATE INDEX rollouts_key ON rollouts (key_sha256)`,
  },
  {
    // A recording imported from an agent's own session log (daemon/import/) names that session once
    // (`claude-code:<session id>`): importing it again finds it instead of making a second copy.
    version: 12,
    name: 'recordings imported from session logs keep their session key (import_key)',
    up: `
ALTER TABLE recordings ADD COLUMN import_key TEXT;
CREATE UNIQUE INDEX recordings_import_key ON recordings (import_key)`,
  },
  {
    // Why each attempt failed (protocol/failures.ts): infrastructure failures are retried within the
    // rollout's own budget and never become a reward; the rollout keeps its latest failure.
    version: 14,
    name: 'attempts and rollouts keep why they failed (failure kind and reason)',
    up: `
ALTER TABLE attempts ADD COLUMN failure_kind TEXT;
ALTER TABLE attempts ADD COLUMN failure_reason TEXT;
ALTER TABLE rollouts ADD COLUMN failure_kind TEXT;
ALTER TABLE rollouts ADD COLUMN failure_reason TEXT;
ALTER TABLE rollouts ADD COLUMN infrastructure_retries {INT} NOT NULL DEFAULT 0`,
  },
  {
    // An evaluation: a split of a run's tasks at a fixed model version, no training (daemon/eval/).
    // Its per-task results are one JSON value, written once when it finishes.
    version: 16,
    name: 'evaluations',
    up: `
CREATE TABLE evaluations (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  split TEXT NOT NULL,
  attempts {INT} NOT NULL,
  harness_dir TEXT,
  model_version {INT},
  seed {INT} NOT NULL,
  spec {JSON} NOT NULL,
  status TEXT NOT NULL,
  error TEXT,
  summary {JSON},
  tasks {JSON},
  created_at {TS} NOT NULL,
  finished_at {TS}
);
CREATE INDEX evaluations_run ON evaluations (run_id)`,
  },
  {
    // Harness evolution (daemon/evolve/): an evolution and its candidates, each a content-addressed
    // snapshot stored as the patch against its parent (the root: against nothing), with its verdicts.
    version: 17,
    name: 'evolutions and their candidates',
    up: `
CREATE TABLE evolutions (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  status TEXT NOT NULL,
  error TEXT,
  harness_dir TEXT NOT NULL,
  config {JSON} NOT NULL,
  base_dir TEXT,
  result {JSON},
  created_at {TS} NOT NULL,
  finished_at {TS}
);
CREATE TABLE candidates (
  evolution_id TEXT NOT NULL REFERENCES evolutions(id) ON DELETE CASCADE,
  hash TEXT NOT NULL,
  parent TEXT,
  generation {INT} NOT NULL,
  status TEXT NOT NULL,
  patch {JSON} NOT NULL,
  fields {JSON} NOT NULL,
  created_at {TS} NOT NULL,
  PRIMARY KEY (evolution_id, hash)
)`,
  },
  {
    // A scoped recording records only the calls that present its key: it neither stops the active
    // recording nor becomes it (an evolution's proposer and critic record beside a person's session).
    version: 18,
    name: 'scoped recordings (recorded by their key, beside the active one)',
    up: 'ALTER TABLE recordings ADD COLUMN scoped {INT} NOT NULL DEFAULT 0',
  },
  {
    // A run's worker credential (daemon/worker/credential.ts): what remote workers (Ray jobs) present
    // instead of the daemon token, good for the run's worker routes only. Its SHA-256 only; NULL: none
    // or revoked (the run stopped).
    version: 19,
    name: 'run worker credentials',
    up: `
ALTER TABLE runs ADD COLUMN worker_key_sha256 TEXT;
CREATE INDEX runs_worker_key ON runs (worker_key_sha256)`,
  },
  {
    // An evaluation's run never trains; the Runs view lists training runs and keeps these apart.
    version: 20,
    name: 'run kinds (training, evaluation)',
    up: `
ALTER TABLE runs ADD COLUMN kind TEXT NOT NULL DEFAULT 'training';
UPDATE runs SET kind = 'evaluation' WHERE id IN (SELECT run_id FROM evaluations)`,
  },
];

export function migrations(
  dialect: Dialect,
): { version: number; name: string; up: string; data?: (q: Queryable) => Promise<void> }[] {
  const types = TYPES[dialect];
  return MIGRATIONS.map((m) => {
    const sql = typeof m.up === 'string' ? m.up : m.up[dialect];
    return {
      version: m.version,
      name: m.name,
      up: sql.replace(/\{(\w+)\}/g, (_, t: string) => types[t]),
      data: m.data?.[dialect],
    };
  });
}

export const LATEST_VERSION = MIGRATIONS[MIGRATIONS.length - 1].version;

/** Applies the migrations after the current version up to `target` (default: all), in one transaction. */
export async function migrate(driver: Driver, target = LATEST_VERSION): Promise<number[]> {
  const list = migrations(driver.dialect).filter((m) => m.version <= target);
  return driver.transaction(async (q: Queryable) => {
    // Two daemons opening one PostgreSQL database at once must not both migrate it.
    if (driver.dialect === 'postgres') await q.get('SELECT pg_advisory_xact_lock(727274)');
    await q.exec(
      `CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)`,
    );
    const rows = await q.all<{ version: number }>('SELECT version FROM schema_migrations');
    const applied = new Set(rows.map((r) => Number(r.version)));
    const newest = Math.max(0, ...applied);
    if (newest > LATEST_VERSION) {
      throw new Error(
        `the store's schema is version ${newest}, newer than this harness-rl knows (${LATEST_VERSION}); upgrade harness-rl`,
      );
    }
    const done: number[] = [];
    for (const m of list) {
      if (applied.has(m.version)) continue;
      await q.exec(m.up);
      if (m.data) await m.data(q);
      await q.run('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)', [
        m.version,
        m.name,
        new Date().toISOString(),
      ]);
      done.push(m.version);
    }
    return done;
  });
}
