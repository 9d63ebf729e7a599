// The Store, written once over the Driver seam; SQLite and PostgreSQL differ only in their drivers.
// Every method is one transaction; events are published to subscribers after the commit.
import {
  type Attempt,
  AttemptStatus,
  type Group,
  GroupStatus,
  type LlmCall,
  type ModelVersion,
  type NewLlmCall,
  NodeInfo,
  NodeKind,
  type Page,
  type PrefixBreak,
  type Recording,
  type Reward,
  type Rollout,
  RolloutKind,
  type RolloutStats,
  RolloutStatus,
  type Run,
  type RunMetrics,
  RunStatus,
  type Task,
} from '../protocol/entities';
import type { DaemonEvent, LlmCallSummary } from '../protocol/events';
import { decodeIds, decodeLogprobs, encodeIds, encodeLogprobs } from './codec';
import type { Driver, Param, Queryable, Row } from './driver';
import { keyHash, newId, newKey } from './ids';
import { type NewRollout, type RolloutFilter, type Store, StoreError } from './store';

const DEFAULT_LIMIT = 100;
const MAX_LIMIT = 1000;

const now = (): string => new Date().toISOString();
const iso = (v: unknown): string => (v instanceof Date ? v.toISOString() : String(v));
const isoOrNull = (v: unknown): string | null => (v == null ? null : iso(v));
const num = (v: unknown): number => Number(v);
const numOrNull = (v: unknown): number | null => (v == null ? null : Number(v));
const str = (v: unknown): string | null => (v == null ? null : String(v));
const json = (v: unknown): string | null => (v === undefined || v === null ? null : JSON.stringify(v));
const parse = (v: unknown): unknown => (v == null ? null : JSON.parse(String(v)));

const RUN_STATUSES = RunStatus.options;
const GROUP_STATUSES = GroupStatus.options;
const ROLLOUT_KINDS = RolloutKind.options;
const ROLLOUT_STATUSES = RolloutStatus.options;
const FINISHED_ATTEMPT = AttemptStatus.options.filter((status) => status !== 'running');
const NODE_KINDS = NodeKind.options;
const NODE_STATUSES = NodeInfo.shape.status.options;

// ---- row mapping -------------------------------------------------------------------------------

const RUN_COLS_V1 = 'id, name, status, config, step, model_version, error, created_at, updated_at';
const RUN_COLS = `${RUN_COLS_V1}, base_dir`;
function toRun(r: Row): Run {
  return {
    id: String(r.id),
    name: String(r.name),
    status: r.status as Run['status'],
    config: parse(r.config),
    step: num(r.step),
    model_version: num(r.model_version),
    error: str(r.error),
    created_at: iso(r.created_at),
    updated_at: iso(r.updated_at),
    ...(r.base_dir === null || r.base_dir === undefined ? {} : { base_dir: String(r.base_dir) }),
  };
}

const GROUP_COLS = 'id, run_id, task_id, step, size, status, created_at';
function toGroup(r: Row): Group {
  return {
    id: String(r.id),
    run_id: String(r.run_id),
    task_id: str(r.task_id),
    step: num(r.step),
    size: num(r.size),
    status: r.status as GroupStatus,
    created_at: iso(r.created_at),
  };
}

const ROLLOUT_COLS =
  'id, kind, run_id, group_id, task_id, recording_id, input, status, attempt_count, max_attempts, reward, error, stats, created_at, updated_at, started_at, finished_at';
function toRollout(r: Row): Rollout {
  return {
    id: String(r.id),
    kind: r.kind as Rollout['kind'],
    run_id: str(r.run_id),
    group_id: str(r.group_id),
    task_id: str(r.task_id),
    recording_id: str(r.recording_id),
    input: parse(r.input),
    status: r.status as Rollout['status'],
    attempt_count: num(r.attempt_count),
    max_attempts: num(r.max_attempts),
    reward: numOrNull(r.reward),
    error: str(r.error),
    stats: parse(r.stats) as RolloutStats | null,
    created_at: iso(r.created_at),
    updated_at: iso(r.updated_at),
    started_at: isoOrNull(r.started_at),
    finished_at: isoOrNull(r.finished_at),
  };
}

const ATTEMPT_COLS = 'id, rollout_id, idx, status, worker, error, started_at, heartbeat_at, finished_at';
function toAttempt(r: Row): Attempt {
  return {
    id: String(r.id),
    rollout_id: String(r.rollout_id),
    index: num(r.idx),
    status: r.status as AttemptStatus,
    worker: str(r.worker),
    error: str(r.error),
    started_at: iso(r.started_at),
    heartbeat_at: iso(r.heartbeat_at),
    finished_at: isoOrNull(r.finished_at),
  };
}

const CALL_COLUMNS = [
  'id',
  'rollout_id',
  'attempt_id',
  'recording_id',
  'seq',
  'wire_api',
  'stream',
  'request',
  'backend_request',
  'response',
  'prompt_ids',
  'response_ids',
  'response_logprobs',
  'token_source',
  'bridge',
  'finish_reason',
  'usage',
  'model',
  'model_version',
  'backend',
  'status',
  'error',
  'http_status',
  'tags',
  'queue_ms',
  'ttft_ms',
  'total_ms',
  'created_at',
] as const;
const CALL_COLS = CALL_COLUMNS.join(', ');

function toCall(r: Row): LlmCall {
  return {
    id: String(r.id),
    rollout_id: str(r.rollout_id),
    attempt_id: str(r.attempt_id),
    recording_id: str(r.recording_id),
    seq: num(r.seq),
    wire_api: r.wire_api as LlmCall['wire_api'],
    stream: Boolean(num(r.stream)),
    request: parse(r.request),
    backend_request: parse(r.backend_request),
    response: parse(r.response),
    prompt_ids: r.prompt_ids == null ? null : decodeIds(r.prompt_ids as Uint8Array),
    response_ids: r.response_ids == null ? null : decodeIds(r.response_ids as Uint8Array),
    response_logprobs: r.response_logprobs == null ? null : decodeLogprobs(r.response_logprobs as Uint8Array),
    token_source: r.token_source as LlmCall['token_source'],
    bridge: parse(r.bridge),
    finish_reason: str(r.finish_reason),
    usage: parse(r.usage) as LlmCall['usage'],
    model: str(r.model),
    model_version: numOrNull(r.model_version),
    backend: str(r.backend),
    status: r.status as LlmCall['status'],
    error: str(r.error),
    http_status: numOrNull(r.http_status),
    tags: (parse(r.tags) as string[] | null) ?? [],
    queue_ms: numOrNull(r.queue_ms),
    ttft_ms: numOrNull(r.ttft_ms),
    total_ms: numOrNull(r.total_ms),
    created_at: iso(r.created_at),
  };
}

/** The live-event form of a call: no bodies or token arrays, only their lengths. */
export function summarizeCall(call: LlmCall): LlmCallSummary {
  const {
    request: _request,
    backend_request: _backendRequest,
    response: _response,
    prompt_ids,
    response_ids,
    response_logprobs: _logprobs,
    ...rest
  } = call;
  return {
    ...rest,
    prompt_tokens: prompt_ids?.length ?? null,
    response_tokens: response_ids?.length ?? null,
  };
}

const REWARD_COLS = 'id, rollout_id, value, source, detail, created_at';
function toReward(r: Row): Reward {
  return {
    id: String(r.id),
    rollout_id: String(r.rollout_id),
    value: num(r.value),
    source: String(r.source),
    detail: parse(r.detail),
    created_at: iso(r.created_at),
  };
}

const RECORDING_COLS = 'id, name, status, upstream, rollout_id, created_at, stopped_at';
function toRecording(r: Row): Recording {
  return {
    id: String(r.id),
    name: String(r.name),
    status: r.status as Recording['status'],
    upstream: parse(r.upstream),
    rollout_id: String(r.rollout_id),
    created_at: iso(r.created_at),
    stopped_at: isoOrNull(r.stopped_at),
  };
}

const NODE_COLS = 'id, name, kind, url, status, model_version, detail, last_seen_at';
function toNode(r: Row): NodeInfo {
  return {
    id: String(r.id),
    name: String(r.name),
    kind: r.kind as NodeInfo['kind'],
    url: String(r.url),
    status: r.status as NodeInfo['status'],
    model_version: numOrNull(r.model_version),
    detail: parse(r.detail),
    last_seen_at: iso(r.last_seen_at),
  };
}

const MODEL_VERSION_COLS = 'run_id, version, path, metrics, created_at';
function toModelVersion(r: Row): ModelVersion {
  return {
    run_id: str(r.run_id),
    version: num(r.version),
    path: str(r.path),
    metrics: parse(r.metrics),
    created_at: iso(r.created_at),
  };
}

// ---- validation helpers --------------------------------------------------------------------------

function invalid(field: string, message: string): never {
  throw new StoreError('invalid', message, field);
}
function notFound(field: string, what: string, id: string): never {
  throw new StoreError('not_found', `${what} ${id} does not exist`, field);
}
function oneOf(field: string, value: unknown, allowed: readonly string[]): void {
  if (typeof value !== 'string' || !allowed.includes(value)) {
    invalid(field, `${field} must be one of ${allowed.join(', ')} (got ${JSON.stringify(value)})`);
  }
}
function nonNegativeInt(field: string, value: unknown): void {
  if (!Number.isInteger(value) || (value as number) < 0)
    invalid(field, `${field} must be a non-negative integer`);
}
function pageLimit(limit: number | undefined): number {
  if (limit === undefined) return DEFAULT_LIMIT;
  if (!Number.isInteger(limit) || limit < 1) invalid('limit', 'limit must be a positive integer');
  return Math.min(limit, MAX_LIMIT);
}
function page<T extends { id: string }>(rows: T[], limit: number): Page<T> {
  if (rows.length > limit) {
    const items = rows.slice(0, limit);
    return { items, next_cursor: items[items.length - 1].id };
  }
  return { items: rows, next_cursor: null };
}

/** Maps constraint violations the checks did not catch (races, other writers) to StoreErrors. */
function mapDriverError(err: unknown): unknown {
  if (err instanceof StoreError || !(err instanceof Error)) return err;
  const code = (err as { code?: string }).code ?? '';
  if (code === '23503' || code === 'SQLITE_CONSTRAINT_FOREIGNKEY') {
    return new StoreError('not_found', `a referenced row does not exist (${err.message})`);
  }
  if (code === '23505' || code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY') {
    return new StoreError('conflict', `already exists (${err.message})`);
  }
  return err;
}

type Emit = (event: DaemonEvent) => void;

export class SqlStore implements Store {
  readonly kind: string;
  private readonly listeners = new Set<(event: DaemonEvent) => void>();
  private closed = false;

  constructor(private readonly db: Driver) {
    this.kind = db.dialect;
  }

  /** The driver, for tests and tools that need raw SQL (migrations, benchmarks). */
  get driver(): Driver {
    return this.db;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.listeners.clear();
    await this.db.close();
  }

  subscribe(listener: (event: DaemonEvent) => void): () => void {
    this.listeners.add(listener);
    return () => {
      this.listeners.delete(listener);
    };
  }

  /** Publish an event that changes nothing stored (who is attached to a run …). */
  announce(event: DaemonEvent): void {
    if (!this.closed) this.publish([event]);
  }

  private publish(events: DaemonEvent[]): void {
    if (events.length === 0 || this.listeners.size === 0) return;
    for (const event of events) {
      for (const listener of this.listeners) {
        try {
          listener(event);
        } catch {
          // A subscriber's failure must not undo or break a committed write.
        }
      }
    }
  }

  /** One transaction; events collected in it are published after the commit. */
  private async tx<T>(fn: (q: Queryable, emit: Emit) => Promise<T>): Promise<T> {
    const events: DaemonEvent[] = [];
    let result: T;
    try {
      result = await this.db.transaction((q) => fn(q, (e) => events.push(e)));
    } catch (err) {
      throw mapDriverError(err);
    }
    this.publish(events);
    return result;
  }

  private async read<T>(fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      throw mapDriverError(err);
    }
  }

  private async exists(q: Queryable, table: string, id: string): Promise<boolean> {
    return (await q.get(`SELECT 1 AS x FROM ${table} WHERE id = ?`, [id])) !== undefined;
  }
  private async mustExist(q: Queryable, table: string, id: unknown, field: string, what: string) {
    if (typeof id !== 'string' || !(await this.exists(q, table, id))) notFound(field, what, String(id));
  }

  // ---- runs ------------------------------------------------------------------------------------

  async createRun(input: { name: string; config: unknown; base_dir?: string }): Promise<Run> {
    if (typeof input.name !== 'string') invalid('name', 'name must be a string');
    if (input.base_dir !== undefined && typeof input.base_dir !== 'string')
      invalid('base_dir', 'base_dir must be a string');
    const t = now();
    const run: Run = {
      id: newId('run'),
      name: input.name,
      status: 'created',
      config: input.config ?? null,
      step: 0,
      model_version: 0,
      error: null,
      created_at: t,
      updated_at: t,
      ...(input.base_dir === undefined ? {} : { base_dir: input.base_dir }),
    };
    return this.tx(async (q, emit) => {
      const values = [
        run.id,
        run.name,
        run.status,
        JSON.stringify(run.config),
        run.step,
        run.model_version,
        run.error,
        run.created_at,
        run.updated_at,
      ];
      // base_dir only when given (a store opened at an older schema version has no such column).
      if (run.base_dir === undefined) {
        await q.run(`INSERT INTO runs (${RUN_COLS_V1}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`, values);
      } else {
        await q.run(`INSERT INTO runs (${RUN_COLS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, [
          ...values,
          run.base_dir,
        ]);
      }
      emit({ type: 'run', run });
      return run;
    });
  }

  async getRun(id: string): Promise<Run | null> {
    const row = await this.read(() => this.db.get(`SELECT ${RUN_COLS} FROM runs WHERE id = ?`, [id]));
    return row ? toRun(row) : null;
  }

  /** Newest first. */
  async listRuns(p: { cursor?: string; limit?: number } = {}): Promise<Page<Run>> {
    const limit = pageLimit(p.limit);
    const rows = await this.read(() =>
      p.cursor
        ? this.db.all(`SELECT ${RUN_COLS} FROM runs WHERE id < ? ORDER BY id DESC LIMIT ?`, [
            p.cursor!,
            limit + 1,
          ])
        : this.db.all(`SELECT ${RUN_COLS} FROM runs ORDER BY id DESC LIMIT ?`, [limit + 1]),
    );
    return page(rows.map(toRun), limit);
  }

  async updateRun(
    id: string,
    patch: Partial<Pick<Run, 'status' | 'step' | 'model_version' | 'error'>>,
  ): Promise<Run> {
    if (patch.status !== undefined) oneOf('status', patch.status, RUN_STATUSES);
    if (patch.step !== undefined) nonNegativeInt('step', patch.step);
    if (patch.model_version !== undefined) nonNegativeInt('model_version', patch.model_version);
    return this.tx(async (q, emit) => {
      const row = await q.get(`SELECT ${RUN_COLS} FROM runs WHERE id = ?${this.db.forUpdate}`, [id]);
      if (!row) notFound('run_id', 'run', id);
      const run = toRun(row);
      const next: Run = {
        ...run,
        status: patch.status ?? run.status,
        step: patch.step ?? run.step,
        model_version: patch.model_version ?? run.model_version,
        error: patch.error !== undefined ? patch.error : run.error,
        updated_at: now(),
      };
      await q.run(
        'UPDATE runs SET status = ?, step = ?, model_version = ?, error = ?, updated_at = ? WHERE id = ?',
        [next.status, next.step, next.model_version, next.error, next.updated_at, id],
      );
      emit({ type: 'run', run: next });
      return next;
    });
  }

  /** Metrics of one step merge with what the step already has (training, then validation …). */
  async addRunMetrics(
    runId: string,
    step: number,
    metrics: Record<string, number | null>,
  ): Promise<RunMetrics> {
    nonNegativeInt('step', step);
    if (metrics === null || typeof metrics !== 'object') invalid('metrics', 'metrics must be an object');
    for (const [k, v] of Object.entries(metrics)) {
      if (v !== null && typeof v !== 'number')
        invalid(`metrics.${k}`, `metric ${k} must be a number or null`);
    }
    return this.tx(async (q, emit) => {
      // The run's row lock serializes writers of its metrics (read, merge, write).
      const run = await q.get(`SELECT id FROM runs WHERE id = ?${this.db.forUpdate}`, [runId]);
      if (!run) notFound('run_id', 'run', runId);
      const old = await q.get(
        `SELECT metrics, created_at FROM run_metrics WHERE run_id = ? AND step = ?${this.db.forUpdate}`,
        [runId, step],
      );
      const merged = { ...((parse(old?.metrics) as Record<string, number | null>) ?? {}), ...metrics };
      const row: RunMetrics = {
        run_id: runId,
        step,
        metrics: merged,
        created_at: old ? iso(old.created_at) : now(),
      };
      if (old) {
        await q.run('UPDATE run_metrics SET metrics = ? WHERE run_id = ? AND step = ?', [
          JSON.stringify(merged),
          runId,
          step,
        ]);
      } else {
        await q.run('INSERT INTO run_metrics (run_id, step, metrics, created_at) VALUES (?, ?, ?, ?)', [
          runId,
          step,
          JSON.stringify(merged),
          row.created_at,
        ]);
      }
      emit({ type: 'run_metrics', metrics: row });
      return row;
    });
  }

  async listRunMetrics(runId: string): Promise<RunMetrics[]> {
    return this.read(async () => {
      await this.mustExist(this.db, 'runs', runId, 'run_id', 'run');
      const rows = await this.db.all(
        'SELECT run_id, step, metrics, created_at FROM run_metrics WHERE run_id = ? ORDER BY step',
        [runId],
      );
      return rows.map((r) => ({
        run_id: String(r.run_id),
        step: num(r.step),
        metrics: parse(r.metrics) as Record<string, number | null>,
        created_at: iso(r.created_at),
      }));
    });
  }

  // ---- tasks and groups ------------------------------------------------------------------------

  async createTasks(runId: string, tasks: { input: unknown; split: Task['split'] }[]): Promise<Task[]> {
    tasks.forEach((t, i) => {
      oneOf(`tasks[${i}].split`, t.split, ['train', 'validation']);
    });
    return this.tx(async (q) => {
      const run = await q.get(`SELECT id FROM runs WHERE id = ?${this.db.forUpdate}`, [runId]);
      if (!run) notFound('run_id', 'run', runId);
      const last = await q.get<{ idx: number }>(
        'SELECT idx FROM tasks WHERE run_id = ? ORDER BY idx DESC LIMIT 1',
        [runId],
      );
      const start = last === undefined ? 0 : Number(last.idx) + 1;
      const created: Task[] = tasks.map((t, i) => ({
        id: newId('task'),
        run_id: runId,
        index: start + i,
        split: t.split,
        input: t.input ?? null,
      }));
      await q.insertMany(
        'tasks',
        ['id', 'run_id', 'idx', 'split', 'input'],
        created.map((t) => [t.id, t.run_id, t.index, t.split, json(t.input)]),
      );
      return created;
    });
  }

  async listTasks(runId: string, split?: Task['split']): Promise<Task[]> {
    return this.read(async () => {
      await this.mustExist(this.db, 'runs', runId, 'run_id', 'run');
      const rows = split
        ? await this.db.all(
            'SELECT id, run_id, idx, split, input FROM tasks WHERE run_id = ? AND split = ? ORDER BY idx',
            [runId, split],
          )
        : await this.db.all('SELECT id, run_id, idx, split, input FROM tasks WHERE run_id = ? ORDER BY idx', [
            runId,
          ]);
      return rows.map((r) => ({
        id: String(r.id),
        run_id: String(r.run_id),
        index: num(r.idx),
        split: r.split as Task['split'],
        input: parse(r.input),
      }));
    });
  }

  async createGroup(input: {
    run_id: string;
    task_id: string | null;
    step: number;
    size: number;
  }): Promise<Group> {
    nonNegativeInt('step', input.step);
    if (!Number.isInteger(input.size) || input.size < 1) invalid('size', 'size must be a positive integer');
    const group: Group = {
      id: newId('grp'),
      run_id: input.run_id,
      task_id: input.task_id ?? null,
      step: input.step,
      size: input.size,
      status: 'pending',
      created_at: now(),
    };
    return this.tx(async (q) => {
      await this.mustExist(q, 'runs', input.run_id, 'run_id', 'run');
      if (group.task_id !== null) await this.mustExist(q, 'tasks', group.task_id, 'task_id', 'task');
      await q.run(`INSERT INTO rollout_groups (${GROUP_COLS}) VALUES (?, ?, ?, ?, ?, ?, ?)`, [
        group.id,
        group.run_id,
        group.task_id,
        group.step,
        group.size,
        group.status,
        group.created_at,
      ]);
      return group;
    });
  }

  async getGroup(id: string): Promise<Group | null> {
    const row = await this.read(() =>
      this.db.get(`SELECT ${GROUP_COLS} FROM rollout_groups WHERE id = ?`, [id]),
    );
    return row ? toGroup(row) : null;
  }

  /** Newest first, keyset-paged by id (like runs and rollouts). */
  async listGroups(runId: string, p: { cursor?: string; limit?: number } = {}): Promise<Page<Group>> {
    const limit = pageLimit(p.limit);
    return this.read(async () => {
      await this.mustExist(this.db, 'runs', runId, 'run_id', 'run');
      const rows = await this.db.all(
        `SELECT ${GROUP_COLS} FROM rollout_groups WHERE run_id = ?${p.cursor ? ' AND id < ?' : ''} ORDER BY id DESC LIMIT ?`,
        p.cursor ? [runId, p.cursor, limit + 1] : [runId, limit + 1],
      );
      return page(rows.map(toGroup), limit);
    });
  }

  async setGroupStatus(id: string, status: GroupStatus): Promise<void> {
    oneOf('status', status, GROUP_STATUSES);
    await this.tx(async (q) => {
      const changed = await q.run('UPDATE rollout_groups SET status = ? WHERE id = ?', [status, id]);
      if (changed === 0) notFound('group_id', 'group', id);
    });
  }

  // ---- rollouts --------------------------------------------------------------------------------

  private async lockRollout(q: Queryable, id: string): Promise<Rollout> {
    const row = await q.get(`SELECT ${ROLLOUT_COLS} FROM rollouts WHERE id = ?${this.db.forUpdate}`, [id]);
    if (!row) notFound('rollout_id', 'rollout', id);
    return toRollout(row);
  }

  private async saveRollout(q: Queryable, r: Rollout): Promise<void> {
    await q.run(
      'UPDATE rollouts SET status = ?, attempt_count = ?, reward = ?, error = ?, updated_at = ?, started_at = ?, finished_at = ? WHERE id = ?',
      [r.status, r.attempt_count, r.reward, r.error, r.updated_at, r.started_at, r.finished_at, r.id],
    );
  }

  async createRollout(input: NewRollout): Promise<Rollout & { key: string }> {
    return (await this.createRollouts([input]))[0];
  }

  async createRollouts(inputs: NewRollout[]): Promise<(Rollout & { key: string })[]> {
    const t = now();
    const created = inputs.map((input, i) => {
      oneOf(`rollouts[${i}].kind`, input.kind, ROLLOUT_KINDS);
      const max = input.max_attempts ?? 1;
      if (!Number.isInteger(max) || max < 1)
        invalid('max_attempts', 'max_attempts must be a positive integer');
      const rollout: Rollout & { key: string } = {
        id: newId('ro'),
        kind: input.kind,
        run_id: input.run_id ?? null,
        group_id: input.group_id ?? null,
        task_id: input.task_id ?? null,
        recording_id: input.recording_id ?? null,
        input: input.input ?? null,
        status: 'queued',
        attempt_count: 0,
        max_attempts: max,
        reward: null,
        error: null,
        stats: null,
        created_at: t,
        updated_at: t,
        started_at: null,
        finished_at: null,
        key: newKey(),
      };
      return rollout;
    });
    return this.tx(async (q, emit) => {
      // Check each referenced row once (a group's rollouts share them) to name the bad field.
      const refs: [keyof NewRollout, string, string][] = [
        ['run_id', 'runs', 'run'],
        ['group_id', 'rollout_groups', 'group'],
        ['task_id', 'tasks', 'task'],
        ['recording_id', 'recordings', 'recording'],
      ];
      for (const [field, table, what] of refs) {
        const ids = new Set(
          created.map((r) => r[field as keyof Rollout] as string | null).filter((v) => v !== null),
        );
        for (const id of ids) await this.mustExist(q, table, id, field, what);
      }
      await q.insertMany(
        'rollouts',
        [
          'id',
          'kind',
          'run_id',
          'group_id',
          'task_id',
          'recording_id',
          'input',
          'status',
          'attempt_count',
          'max_attempts',
          'key_sha256',
          'created_at',
          'updated_at',
        ],
        created.map((r) => [
          r.id,
          r.kind,
          r.run_id,
          r.group_id,
          r.task_id,
          r.recording_id,
          json(r.input),
          r.status,
          0,
          r.max_attempts,
          keyHash(r.key),
          r.created_at,
          r.updated_at,
        ]),
      );
      for (const r of created) {
        const { key: _key, ...rollout } = r;
        emit({ type: 'rollout', rollout });
      }
      return created;
    });
  }

  async getRollout(id: string): Promise<Rollout | null> {
    const row = await this.read(() => this.db.get(`SELECT ${ROLLOUT_COLS} FROM rollouts WHERE id = ?`, [id]));
    return row ? toRollout(row) : null;
  }

  async getRolloutKeyHash(id: string): Promise<string | null> {
    const row = await this.read(() =>
      this.db.get<{ key_sha256: string }>('SELECT key_sha256 FROM rollouts WHERE id = ?', [id]),
    );
    return row ? String(row.key_sha256) : null;
  }

  async issueRolloutKey(id: string): Promise<string | null> {
    const key = newKey();
    const changed = await this.tx((q) =>
      q.run('UPDATE rollouts SET key_sha256 = ? WHERE id = ?', [keyHash(key), id]),
    );
    return changed > 0 ? key : null;
  }

  /** Newest first, keyset-paged by id (the cursor is the last id of the previous page). */
  async listRollouts(filter: RolloutFilter): Promise<Page<Rollout>> {
    const limit = pageLimit(filter.limit);
    const where: string[] = [];
    const params: Param[] = [];
    if (filter.run_id !== undefined) {
      where.push('run_id = ?');
      params.push(filter.run_id);
    }
    if (filter.group_id !== undefined) {
      where.push('group_id = ?');
      params.push(filter.group_id);
    }
    if (filter.status !== undefined) {
      oneOf('status', filter.status, ROLLOUT_STATUSES);
      where.push('status = ?');
      params.push(filter.status);
    }
    if (filter.min_reward !== undefined) {
      if (typeof filter.min_reward !== 'number' || Number.isNaN(filter.min_reward))
        invalid('min_reward', 'min_reward must be a number');
      where.push('reward >= ?');
      params.push(filter.min_reward);
    }
    if (filter.max_reward !== undefined) {
      if (typeof filter.max_reward !== 'number' || Number.isNaN(filter.max_reward))
        invalid('max_reward', 'max_reward must be a number');
      where.push('reward <= ?');
      params.push(filter.max_reward);
    }
    if (filter.has_reward !== undefined)
      where.push(filter.has_reward ? 'reward IS NOT NULL' : 'reward IS NULL');
    if (filter.cursor) {
      where.push('id < ?');
      params.push(filter.cursor);
    }
    params.push(limit + 1);
    const sql = `SELECT ${ROLLOUT_COLS} FROM rollouts${where.length ? ` WHERE ${where.join(' AND ')}` : ''} ORDER BY id DESC LIMIT ?`;
    const rows = await this.read(() => this.db.all(sql, params));
    return page(rows.map(toRollout), limit);
  }

  private async beginAttempt(q: Queryable, rollout: Rollout, worker: string | null, emit: Emit) {
    const t = now();
    const attempt: Attempt = {
      id: newId('att'),
      rollout_id: rollout.id,
      index: rollout.attempt_count + 1,
      status: 'running',
      worker,
      error: null,
      started_at: t,
      heartbeat_at: t,
      finished_at: null,
    };
    await q.run(`INSERT INTO attempts (${ATTEMPT_COLS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`, [
      attempt.id,
      attempt.rollout_id,
      attempt.index,
      attempt.status,
      attempt.worker,
      attempt.error,
      attempt.started_at,
      attempt.heartbeat_at,
      attempt.finished_at,
    ]);
    const next: Rollout = {
      ...rollout,
      status: 'running',
      attempt_count: attempt.index,
      started_at: rollout.started_at ?? t,
      updated_at: t,
    };
    await this.saveRollout(q, next);
    emit({ type: 'rollout', rollout: next });
    return { rollout: next, attempt };
  }

  /** Takes the oldest queued rollout of kind "run" (standalone ones are started by their harness). */
  async claimRollout(filter: { run_id?: string; worker?: string } = {}) {
    return this.tx(async (q, emit) => {
      const row = await q.get(
        `SELECT ${ROLLOUT_COLS} FROM rollouts WHERE status = 'queued' AND kind = 'run'${
          filter.run_id !== undefined ? ' AND run_id = ?' : ''
        } ORDER BY id LIMIT 1${this.db.skipLocked}`,
        filter.run_id !== undefined ? [filter.run_id] : [],
      );
      if (!row) return null;
      return this.beginAttempt(q, toRollout(row), filter.worker ?? null, emit);
    });
  }

  async startAttempt(rolloutId: string, worker?: string): Promise<Attempt> {
    return this.tx(async (q, emit) => {
      const rollout = await this.lockRollout(q, rolloutId);
      if (rollout.status !== 'queued') {
        throw new StoreError('conflict', `rollout ${rolloutId} is ${rollout.status}, not queued`, 'status');
      }
      return (await this.beginAttempt(q, rollout, worker ?? null, emit)).attempt;
    });
  }

  async heartbeat(attemptId: string): Promise<void> {
    await this.tx(async (q) => {
      const changed = await q.run(
        "UPDATE attempts SET heartbeat_at = ? WHERE id = ? AND status = 'running'",
        [now(), attemptId],
      );
      if (changed === 0) {
        const row = await q.get<{ status: string }>('SELECT status FROM attempts WHERE id = ?', [attemptId]);
        if (!row) notFound('attempt_id', 'attempt', attemptId);
        throw new StoreError('conflict', `attempt ${attemptId} is ${row.status}, not running`, 'status');
      }
    });
  }

  /** Ends the running attempts of a rollout (complete/fail/cancel without attempt bookkeeping). */
  private async endRunningAttempts(
    q: Queryable,
    rolloutId: string,
    status: AttemptStatus,
    error: string | null,
  ) {
    const t = now();
    await q.run(
      "UPDATE attempts SET status = ?, error = ?, finished_at = ?, heartbeat_at = ? WHERE rollout_id = ? AND status = 'running'",
      [status, error, t, t, rolloutId],
    );
  }

  async finishAttempt(
    attemptId: string,
    status: Exclude<AttemptStatus, 'running'>,
    error?: string,
  ): Promise<Rollout> {
    oneOf('status', status, FINISHED_ATTEMPT);
    return this.tx(async (q, emit) => {
      const ref = await q.get<{ rollout_id: string }>('SELECT rollout_id FROM attempts WHERE id = ?', [
        attemptId,
      ]);
      if (!ref) notFound('attempt_id', 'attempt', attemptId);
      // Lock order everywhere: rollout, then its attempts.
      const rollout = await this.lockRollout(q, String(ref.rollout_id));
      const row = await q.get(`SELECT ${ATTEMPT_COLS} FROM attempts WHERE id = ?${this.db.forUpdate}`, [
        attemptId,
      ]);
      const attempt = toAttempt(row!);
      if (attempt.status !== 'running') {
        throw new StoreError('conflict', `attempt ${attemptId} is already ${attempt.status}`, 'status');
      }
      const t = now();
      await q.run(
        'UPDATE attempts SET status = ?, error = ?, finished_at = ?, heartbeat_at = ? WHERE id = ?',
        [status, error ?? null, t, t, attemptId],
      );
      const next: Rollout = { ...rollout, updated_at: t };
      if (status === 'succeeded') {
        Object.assign(next, { status: 'succeeded', error: null, finished_at: t });
      } else if (status === 'cancelled') {
        Object.assign(next, { status: 'cancelled', error: error ?? rollout.error, finished_at: t });
      } else if (rollout.attempt_count < rollout.max_attempts) {
        Object.assign(next, { status: 'queued', error: error ?? status });
      } else {
        Object.assign(next, { status: 'failed', error: error ?? status, finished_at: t });
      }
      await this.saveRollout(q, next);
      emit({ type: 'rollout', rollout: next });
      return next;
    });
  }

  private async endRollout(
    id: string,
    status: 'succeeded' | 'failed' | 'cancelled',
    error: string | null,
  ): Promise<Rollout> {
    return this.tx(async (q, emit) => {
      const rollout = await this.lockRollout(q, id);
      if (rollout.status !== 'queued' && rollout.status !== 'running') {
        throw new StoreError('conflict', `rollout ${id} is already ${rollout.status}`, 'status');
      }
      await this.endRunningAttempts(q, id, status, error);
      const t = now();
      const next: Rollout = {
        ...rollout,
        status,
        error: status === 'succeeded' ? null : (error ?? rollout.error),
        updated_at: t,
        finished_at: t,
      };
      await this.saveRollout(q, next);
      emit({ type: 'rollout', rollout: next });
      return next;
    });
  }

  completeRollout(id: string): Promise<Rollout> {
    return this.endRollout(id, 'succeeded', null);
  }

  failRollout(id: string, error: string): Promise<Rollout> {
    return this.endRollout(id, 'failed', error);
  }

  cancelRollout(id: string): Promise<Rollout> {
    return this.endRollout(id, 'cancelled', null);
  }

  async listStaleAttempts(olderThanMs: number): Promise<Attempt[]> {
    const before = new Date(Date.now() - olderThanMs).toISOString();
    const rows = await this.read(() =>
      this.db.all(
        `SELECT ${ATTEMPT_COLS} FROM attempts WHERE status = 'running' AND heartbeat_at < ? ORDER BY heartbeat_at, id`,
        [before],
      ),
    );
    return rows.map(toAttempt);
  }

  async listAttempts(rolloutId: string): Promise<Attempt[]> {
    return this.read(async () => {
      await this.mustExist(this.db, 'rollouts', rolloutId, 'rollout_id', 'rollout');
      const rows = await this.db.all(
        `SELECT ${ATTEMPT_COLS} FROM attempts WHERE rollout_id = ? ORDER BY idx`,
        [rolloutId],
      );
      return rows.map(toAttempt);
    });
  }

  async setRolloutStats(id: string, stats: RolloutStats, prefixBreaks: PrefixBreak[]): Promise<void> {
    for (const k of ['samples', 'prefix_breaks', 'mask_tokens', 'truncations'] as const) {
      nonNegativeInt(`stats.${k}`, stats?.[k]);
    }
    await this.tx(async (q, emit) => {
      const rollout = await this.lockRollout(q, id);
      const next: Rollout = { ...rollout, stats: { ...stats }, updated_at: now() };
      await q.run('UPDATE rollouts SET stats = ?, updated_at = ? WHERE id = ?', [
        JSON.stringify(next.stats),
        next.updated_at,
        id,
      ]);
      await q.run('DELETE FROM prefix_breaks WHERE rollout_id = ?', [id]);
      await q.insertMany(
        'prefix_breaks',
        ['rollout_id', 'idx', 'data'],
        prefixBreaks.map((b, i) => [id, i, JSON.stringify(b)]),
      );
      emit({ type: 'rollout', rollout: next });
    });
  }

  async getPrefixBreaks(id: string): Promise<PrefixBreak[]> {
    return this.read(async () => {
      await this.mustExist(this.db, 'rollouts', id, 'rollout_id', 'rollout');
      const rows = await this.db.all('SELECT data FROM prefix_breaks WHERE rollout_id = ? ORDER BY idx', [
        id,
      ]);
      return rows.map((r) => parse(r.data) as PrefixBreak);
    });
  }

  // ---- llm calls -------------------------------------------------------------------------------

  async recordLlmCall(call: NewLlmCall): Promise<LlmCall> {
    return (await this.recordLlmCalls([call]))[0];
  }

  /**
   * Calls get consecutive `seq` numbers within their rollout (concurrent writers of one rollout are
   * serialized by its row lock), or 0 without one. A call with only a recording_id joins the
   * recording's rollout.
   */
  async recordLlmCalls(calls: NewLlmCall[]): Promise<LlmCall[]> {
    if (calls.length === 0) return [];
    const t = now();
    const rows: Param[][] = [];
    const out: LlmCall[] = calls.map((c, i) => {
      if (!c || typeof c !== 'object') invalid(`calls[${i}]`, 'a call must be an object');
      oneOf('wire_api', c.wire_api, ['chat', 'completions', 'responses', 'messages', 'gemini']);
      oneOf('token_source', c.token_source, ['backend', 'bridge', 'text']);
      oneOf('status', c.status, ['ok', 'error', 'cancelled']);
      return {
        id: newId('call'),
        rollout_id: c.rollout_id ?? null,
        attempt_id: c.attempt_id ?? null,
        recording_id: c.recording_id ?? null,
        seq: 0,
        wire_api: c.wire_api,
        stream: Boolean(c.stream),
        request: c.request ?? null,
        backend_request: c.backend_request ?? null,
        response: c.response ?? null,
        prompt_ids: c.prompt_ids ?? null,
        response_ids: c.response_ids ?? null,
        response_logprobs: c.response_logprobs ?? null,
        token_source: c.token_source,
        bridge: c.bridge ?? null,
        finish_reason: c.finish_reason ?? null,
        usage: c.usage ?? null,
        model: c.model ?? null,
        model_version: c.model_version ?? null,
        backend: c.backend ?? null,
        status: c.status,
        error: c.error ?? null,
        http_status: c.http_status ?? null,
        tags: c.tags ?? [],
        queue_ms: c.queue_ms ?? null,
        ttft_ms: c.ttft_ms ?? null,
        total_ms: c.total_ms ?? null,
        created_at: t,
      };
    });
    // Encode outside the transaction (it is the bulk of the CPU work).
    const blobs = out.map((c, i): (Buffer | null)[] => {
      try {
        return [
          c.prompt_ids ? encodeIds(c.prompt_ids) : null,
          c.response_ids ? encodeIds(c.response_ids) : null,
          c.response_logprobs ? encodeLogprobs(c.response_logprobs) : null,
        ];
      } catch (err) {
        return invalid(`calls[${i}]`, (err as Error).message);
      }
    });
    return this.tx(async (q, emit) => {
      // Recording-only calls join their recording's rollout.
      for (const c of out) {
        if (c.rollout_id === null && c.recording_id !== null) {
          const rec = await q.get<{ rollout_id: string }>('SELECT rollout_id FROM recordings WHERE id = ?', [
            c.recording_id,
          ]);
          if (!rec) notFound('recording_id', 'recording', c.recording_id);
          c.rollout_id = String(rec.rollout_id);
        }
      }
      const perRollout = new Map<string, LlmCall[]>();
      for (const c of out) {
        if (c.rollout_id === null) continue;
        const list = perRollout.get(c.rollout_id);
        if (list) list.push(c);
        else perRollout.set(c.rollout_id, [c]);
      }
      for (const [rolloutId, list] of perRollout) {
        // The row lock (PostgreSQL) serializes writers of one rollout; SQLite write transactions are
        // exclusive anyway. The last seq comes from the (rollout_id, seq) index; no page is written.
        const locked = await q.get(`SELECT id FROM rollouts WHERE id = ?${this.db.forUpdate}`, [rolloutId]);
        if (!locked) notFound('rollout_id', 'rollout', rolloutId);
        // ORDER BY … LIMIT 1 is one index seek in both databases (SQLite's MAX() here scans the range).
        const last = await q.get<{ seq: number }>(
          'SELECT seq FROM llm_calls WHERE rollout_id = ? ORDER BY seq DESC LIMIT 1',
          [rolloutId],
        );
        const first = last === undefined ? 0 : Number(last.seq) + 1;
        list.forEach((c, i) => {
          c.seq = first + i;
        });
      }
      out.forEach((c, i) => {
        const [promptIds, responseIds, logprobs] = blobs[i];
        rows.push([
          c.id,
          c.rollout_id,
          c.attempt_id,
          c.recording_id,
          c.seq,
          c.wire_api,
          c.stream ? 1 : 0,
          JSON.stringify(c.request),
          json(c.backend_request),
          json(c.response),
          promptIds,
          responseIds,
          logprobs,
          c.token_source,
          json(c.bridge),
          c.finish_reason,
          json(c.usage),
          c.model,
          c.model_version,
          c.backend,
          c.status,
          c.error,
          c.http_status,
          JSON.stringify(c.tags),
          c.queue_ms,
          c.ttft_ms,
          c.total_ms,
          c.created_at,
        ]);
      });
      await q.insertMany('llm_calls', CALL_COLUMNS, rows);
      if (this.listeners.size > 0) for (const c of out) emit({ type: 'llm_call', call: summarizeCall(c) });
      return out;
    });
  }

  async getLlmCall(id: string): Promise<LlmCall | null> {
    const row = await this.read(() => this.db.get(`SELECT ${CALL_COLS} FROM llm_calls WHERE id = ?`, [id]));
    return row ? toCall(row) : null;
  }

  async listLlmCalls(rolloutId: string): Promise<LlmCall[]> {
    return this.read(async () => {
      await this.mustExist(this.db, 'rollouts', rolloutId, 'rollout_id', 'rollout');
      const rows = await this.db.all(
        `SELECT ${CALL_COLS} FROM llm_calls WHERE rollout_id = ? ORDER BY seq, id`,
        [rolloutId],
      );
      return rows.map(toCall);
    });
  }

  async listRecordingCalls(recordingId: string): Promise<LlmCall[]> {
    return this.read(async () => {
      await this.mustExist(this.db, 'recordings', recordingId, 'recording_id', 'recording');
      const rows = await this.db.all(
        `SELECT ${CALL_COLS} FROM llm_calls WHERE recording_id = ? ORDER BY seq, id`,
        [recordingId],
      );
      return rows.map(toCall);
    });
  }

  // ---- rewards ---------------------------------------------------------------------------------

  async addReward(
    rolloutId: string,
    input: { value: number; source: string; detail?: unknown },
  ): Promise<Reward> {
    if (typeof input.value !== 'number' || !Number.isFinite(input.value)) {
      invalid('value', 'reward value must be a finite number');
    }
    if (typeof input.source !== 'string' || input.source === '')
      invalid('source', 'source must be a non-empty string');
    return this.tx(async (q, emit) => {
      const rollout = await this.lockRollout(q, rolloutId);
      const reward: Reward = {
        id: newId('rwd'),
        rollout_id: rolloutId,
        value: input.value,
        source: input.source,
        detail: input.detail ?? null,
        created_at: now(),
      };
      await q.run(`INSERT INTO rewards (${REWARD_COLS}) VALUES (?, ?, ?, ?, ?, ?)`, [
        reward.id,
        reward.rollout_id,
        reward.value,
        reward.source,
        json(reward.detail),
        reward.created_at,
      ]);
      const next: Rollout = { ...rollout, reward: reward.value, updated_at: reward.created_at };
      await q.run('UPDATE rollouts SET reward = ?, updated_at = ? WHERE id = ?', [
        next.reward,
        next.updated_at,
        rolloutId,
      ]);
      emit({ type: 'reward', reward });
      emit({ type: 'rollout', rollout: next });
      return reward;
    });
  }

  async listRewards(rolloutId: string): Promise<Reward[]> {
    return this.read(async () => {
      await this.mustExist(this.db, 'rollouts', rolloutId, 'rollout_id', 'rollout');
      const rows = await this.db.all(`SELECT ${REWARD_COLS} FROM rewards WHERE rollout_id = ? ORDER BY id`, [
        rolloutId,
      ]);
      return rows.map(toReward);
    });
  }

  // ---- model versions, nodes, recordings -------------------------------------------------------

  async addModelVersion(v: Omit<ModelVersion, 'created_at'>): Promise<ModelVersion> {
    nonNegativeInt('version', v.version);
    const mv: ModelVersion = {
      run_id: v.run_id ?? null,
      version: v.version,
      path: v.path ?? null,
      metrics: v.metrics ?? null,
      created_at: now(),
    };
    return this.tx(async (q, emit) => {
      if (mv.run_id !== null) await this.mustExist(q, 'runs', mv.run_id, 'run_id', 'run');
      const dup = await q.get(
        "SELECT 1 AS x FROM model_versions WHERE COALESCE(run_id, '') = ? AND version = ?",
        [mv.run_id ?? '', mv.version],
      );
      if (dup) throw new StoreError('conflict', `model version ${mv.version} already exists`, 'version');
      await q.run(`INSERT INTO model_versions (id, ${MODEL_VERSION_COLS}) VALUES (?, ?, ?, ?, ?, ?)`, [
        newId('mv'),
        mv.run_id,
        mv.version,
        mv.path,
        json(mv.metrics),
        mv.created_at,
      ]);
      emit({ type: 'model_version', run_id: mv.run_id, version: mv.version });
      return mv;
    });
  }

  /** All versions (undefined), the run-less ones (null), or one run's; ordered by version. */
  async listModelVersions(runId?: string | null): Promise<ModelVersion[]> {
    const rows = await this.read(() =>
      runId === undefined
        ? this.db.all(`SELECT ${MODEL_VERSION_COLS} FROM model_versions ORDER BY run_id, version`)
        : runId === null
          ? this.db.all(
              `SELECT ${MODEL_VERSION_COLS} FROM model_versions WHERE run_id IS NULL ORDER BY version`,
            )
          : this.db.all(
              `SELECT ${MODEL_VERSION_COLS} FROM model_versions WHERE run_id = ? ORDER BY version`,
              [runId],
            ),
    );
    return rows.map(toModelVersion);
  }

  async upsertNode(node: NodeInfo): Promise<NodeInfo> {
    if (typeof node.id !== 'string' || node.id === '') invalid('id', 'node id must be a non-empty string');
    oneOf('kind', node.kind, NODE_KINDS);
    oneOf('status', node.status, NODE_STATUSES);
    const n: NodeInfo = {
      id: node.id,
      name: node.name,
      kind: node.kind,
      url: node.url,
      status: node.status,
      model_version: node.model_version ?? null,
      detail: node.detail ?? null,
      last_seen_at: node.last_seen_at ?? now(),
    };
    return this.tx(async (q, emit) => {
      await q.run(
        `INSERT INTO nodes (${NODE_COLS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (id) DO UPDATE SET name = excluded.name, kind = excluded.kind, url = excluded.url,
           status = excluded.status, model_version = excluded.model_version, detail = excluded.detail,
           last_seen_at = excluded.last_seen_at`,
        [n.id, n.name, n.kind, n.url, n.status, n.model_version, json(n.detail), n.last_seen_at],
      );
      emit({ type: 'node', node: n });
      return n;
    });
  }

  async listNodes(): Promise<NodeInfo[]> {
    const rows = await this.read(() => this.db.all(`SELECT ${NODE_COLS} FROM nodes ORDER BY id`));
    return rows.map(toNode);
  }

  private async stopRecordingIn(q: Queryable, rec: Recording, emit: Emit): Promise<Recording> {
    const t = now();
    const stopped: Recording = { ...rec, status: 'stopped', stopped_at: t };
    await q.run("UPDATE recordings SET status = 'stopped', stopped_at = ? WHERE id = ?", [t, rec.id]);
    const rollout = await this.lockRollout(q, rec.rollout_id);
    if (rollout.status === 'running' || rollout.status === 'queued') {
      await this.endRunningAttempts(q, rollout.id, 'succeeded', null);
      const next: Rollout = { ...rollout, status: 'succeeded', updated_at: t, finished_at: t };
      await this.saveRollout(q, next);
      emit({ type: 'rollout', rollout: next });
    }
    emit({ type: 'recording', recording: stopped });
    return stopped;
  }

  /**
   * Starts a recording session and the rollout (kind "recording", running) that collects its calls.
   * Only one recording is active: an active one is stopped first.
   */
  async createRecording(input: { name: string; upstream: unknown }): Promise<Recording & { key: string }> {
    if (typeof input.name !== 'string') invalid('name', 'name must be a string');
    return this.tx(async (q, emit) => {
      // Two daemons sharing a PostgreSQL store must not both start "the" active recording.
      if (this.db.dialect === 'postgres') await q.get('SELECT pg_advisory_xact_lock(727275)');
      const active = await q.all(
        `SELECT ${RECORDING_COLS} FROM recordings WHERE status = 'active'${this.db.forUpdate}`,
      );
      for (const row of active) await this.stopRecordingIn(q, toRecording(row), emit);
      const t = now();
      const recording: Recording = {
        id: newId('rec'),
        name: input.name,
        status: 'active',
        upstream: input.upstream ?? null,
        rollout_id: newId('ro'),
        created_at: t,
        stopped_at: null,
      };
      const key = newKey();
      await q.run(`INSERT INTO recordings (${RECORDING_COLS}, key_sha256) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, [
        recording.id,
        recording.name,
        recording.status,
        json(recording.upstream),
        recording.rollout_id,
        recording.created_at,
        recording.stopped_at,
        keyHash(key),
      ]);
      const rollout: Rollout = {
        id: recording.rollout_id,
        kind: 'recording',
        run_id: null,
        group_id: null,
        task_id: null,
        recording_id: recording.id,
        input: { recording: recording.name },
        status: 'running',
        attempt_count: 0,
        max_attempts: 1,
        reward: null,
        error: null,
        stats: null,
        created_at: t,
        updated_at: t,
        started_at: t,
        finished_at: null,
      };
      await q.run(
        'INSERT INTO rollouts (id, kind, recording_id, input, status, attempt_count, max_attempts, key_sha256, created_at, updated_at, started_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
        [
          rollout.id,
          rollout.kind,
          recording.id,
          json(rollout.input),
          rollout.status,
          0,
          1,
          keyHash(newKey()),
          t,
          t,
          t,
        ],
      );
      emit({ type: 'recording', recording });
      emit({ type: 'rollout', rollout });
      return { ...recording, key };
    });
  }

  async getRecording(id: string): Promise<Recording | null> {
    const row = await this.read(() =>
      this.db.get(`SELECT ${RECORDING_COLS} FROM recordings WHERE id = ?`, [id]),
    );
    return row ? toRecording(row) : null;
  }

  async getRecordingKeyHash(id: string): Promise<string | null> {
    const row = await this.read(() =>
      this.db.get<{ key_sha256: string }>('SELECT key_sha256 FROM recordings WHERE id = ?', [id]),
    );
    return row ? String(row.key_sha256) : null;
  }

  async activeRecording(): Promise<Recording | null> {
    const row = await this.read(() =>
      this.db.get(
        `SELECT ${RECORDING_COLS} FROM recordings WHERE status = 'active' ORDER BY id DESC LIMIT 1`,
      ),
    );
    return row ? toRecording(row) : null;
  }

  /** Newest first. */
  async listRecordings(): Promise<Recording[]> {
    const rows = await this.read(() =>
      this.db.all(`SELECT ${RECORDING_COLS} FROM recordings ORDER BY id DESC`),
    );
    return rows.map(toRecording);
  }

  async stopRecording(id: string): Promise<Recording> {
    return this.tx(async (q, emit) => {
      const row = await q.get(`SELECT ${RECORDING_COLS} FROM recordings WHERE id = ?${this.db.forUpdate}`, [
        id,
      ]);
      if (!row) notFound('recording_id', 'recording', id);
      const rec = toRecording(row);
      if (rec.status !== 'active')
        throw new StoreError('conflict', `recording ${id} is already stopped`, 'status');
      return this.stopRecordingIn(q, rec, emit);
    });
  }
}
