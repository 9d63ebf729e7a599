// A run's tasks and the groups of rollouts sampled for them at each step.
import { type Group, GroupStatus, type Page, RolloutStatus, type Task } from '../../protocol/entities';
import type { Param, Queryable, Row } from '../driver';
import { newId } from '../ids';
import type { GroupFilter } from '../store';
import type { SqlContext } from './context';
import {
  invalid,
  iso,
  json,
  nonNegativeInt,
  notFound,
  now,
  num,
  oneOf,
  page,
  pageLimit,
  parse,
  str,
} from './values';

const GROUP_STATUSES = GroupStatus.options;

const GROUP_COLS = 'id, run_id, task_id, step, size, status, created_at';
/** A group with its task's input, which lists show it by (`WHERE` and `ORDER BY` name columns as `g.`). */
const SELECT_GROUP =
  'SELECT g.id, g.run_id, g.task_id, g.step, g.size, g.status, g.created_at, t.input AS task_input FROM rollout_groups g LEFT JOIN tasks t ON t.id = g.task_id';
function toGroup(r: Row): Group {
  return {
    id: String(r.id),
    run_id: String(r.run_id),
    task_id: str(r.task_id),
    step: num(r.step),
    size: num(r.size),
    status: r.status as GroupStatus,
    created_at: iso(r.created_at),
    task_input: parse(r.task_input),
  };
}

async function selectGroup(q: Queryable, id: string): Promise<Group | null> {
  const row = await q.get(`${SELECT_GROUP} WHERE g.id = ?`, [id]);
  return row ? toGroup(row) : null;
}

export async function createTasks(
  c: SqlContext,
  runId: string,
  tasks: { input: unknown; split: Task['split'] }[],
): Promise<Task[]> {
  tasks.forEach((t, i) => {
    oneOf(`tasks[${i}].split`, t.split, ['train', 'validation', 'test']);
  });
  return c.tx(async (q) => {
    const run = await q.get(`SELECT id FROM runs WHERE id = ?${c.db.forUpdate}`, [runId]);
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

export async function listTasks(c: SqlContext, runId: string, split?: Task['split']): Promise<Task[]> {
  return c.read(async () => {
    await c.mustExist(c.db, 'runs', runId, 'run_id', 'run');
    const rows = split
      ? await c.db.all(
          'SELECT id, run_id, idx, split, input FROM tasks WHERE run_id = ? AND split = ? ORDER BY idx',
          [runId, split],
        )
      : await c.db.all('SELECT id, run_id, idx, split, input FROM tasks WHERE run_id = ? ORDER BY idx', [
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

export async function createGroup(
  c: SqlContext,
  input: {
    run_id: string;
    task_id: string | null;
    step: number;
    size: number;
  },
): Promise<Group> {
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
    task_input: null,
  };
  return c.tx(async (q, emit) => {
    await c.mustExist(q, 'runs', input.run_id, 'run_id', 'run');
    if (group.task_id !== null) {
      const task = await q.get<{ input: unknown }>('SELECT input FROM tasks WHERE id = ?', [group.task_id]);
      if (!task) notFound('task_id', 'task', group.task_id);
      group.task_input = parse(task.input);
    }
    await q.run(`INSERT INTO rollout_groups (${GROUP_COLS}) VALUES (?, ?, ?, ?, ?, ?, ?)`, [
      group.id,
      group.run_id,
      group.task_id,
      group.step,
      group.size,
      group.status,
      group.created_at,
    ]);
    emit({ type: 'group', group });
    return group;
  });
}

export async function getGroup(c: SqlContext, id: string): Promise<Group | null> {
  return c.read(() => selectGroup(c.db, id));
}

/**
 * Newest first, keyset-paged by id (like runs and rollouts). With a rollout filter (status, reward
 * bounds) only the groups that hold a rollout passing all of it.
 */
export async function listGroups(c: SqlContext, runId: string, f: GroupFilter = {}): Promise<Page<Group>> {
  const limit = pageLimit(f.limit);
  const where = ['g.run_id = ?'];
  const params: Param[] = [runId];
  const match: string[] = [];
  if (f.status !== undefined) {
    oneOf('status', f.status, RolloutStatus.options);
    match.push('r.status = ?');
    params.push(f.status);
  }
  for (const [key, op] of [
    ['min_reward', '>='],
    ['max_reward', '<='],
  ] as const) {
    const bound = f[key];
    if (bound === undefined) continue;
    if (typeof bound !== 'number' || Number.isNaN(bound)) invalid(key, `${key} must be a number`);
    match.push(`r.reward ${op} ?`);
    params.push(bound);
  }
  if (match.length)
    where.push(`EXISTS (SELECT 1 FROM rollouts r WHERE r.group_id = g.id AND ${match.join(' AND ')})`);
  if (f.cursor) {
    where.push('g.id < ?');
    params.push(f.cursor);
  }
  params.push(limit + 1);
  return c.read(async () => {
    await c.mustExist(c.db, 'runs', runId, 'run_id', 'run');
    const rows = await c.db.all(
      `${SELECT_GROUP} WHERE ${where.join(' AND ')} ORDER BY g.id DESC LIMIT ?`,
      params,
    );
    return page(rows.map(toGroup), limit);
  });
}

export async function setGroupStatus(c: SqlContext, id: string, status: GroupStatus): Promise<void> {
  oneOf('status', status, GROUP_STATUSES);
  await c.tx(async (q, emit) => {
    const changed = await q.run('UPDATE rollout_groups SET status = ? WHERE id = ?', [status, id]);
    if (changed === 0) notFound('group_id', 'group', id);
    const group = await selectGroup(q, id);
    if (group) emit({ type: 'group', group });
  });
}
