// SWE-bench's instance format on disk: task JSONL read with the line and field of every error, the gold
// patch as a unified diff (`git apply` reads it), patches applied to a copy with `git apply` (which works
// outside a git repository), and the snapshot store an instance names.
import { spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { dirname, isAbsolute, resolve } from 'node:path';
import { type RunnableTask, TaskInstance } from '../protocol/tasks';
import { SnapshotStore } from './snapshot';

const CONTEXT = 3;

/**
 * A unified diff turning `before` into `after` for one file, with one hunk around the changed lines
 * (the common first and last lines are context). Empty when they are equal.
 */
export function unifiedDiff(path: string, before: string, after: string): string {
  if (before === after) return '';
  const a = before.split('\n');
  const b = after.split('\n');
  let head = 0;
  while (head < a.length && head < b.length && a[head] === b[head]) head++;
  let tail = 0;
  while (
    tail < a.length - head &&
    tail < b.length - head &&
    a[a.length - 1 - tail] === b[b.length - 1 - tail]
  )
    tail++;
  const from = Math.max(0, head - CONTEXT);
  const aEnd = Math.min(a.length, a.length - tail + CONTEXT);
  const bEnd = Math.min(b.length, b.length - tail + CONTEXT);
  // a file that ends with a newline splits into a last empty string: it is not a line
  const lastA = before.endsWith('\n') ? a.length - 1 : a.length;
  const lastB = after.endsWith('\n') ? b.length - 1 : b.length;
  const lines: string[] = [];
  for (let i = from; i < head; i++) lines.push(` ${a[i]}`);
  for (let i = head; i < a.length - tail && i < lastA; i++) lines.push(`-${a[i]}`);
  if (!before.endsWith('\n') && a.length - tail >= lastA && head < lastA)
    lines.push('\\ No newline at end of file');
  for (let i = head; i < b.length - tail && i < lastB; i++) lines.push(`+${b[i]}`);
  if (!after.endsWith('\n') && b.length - tail >= lastB && head < lastB)
    lines.push('\\ No newline at end of file');
  for (let i = a.length - tail; i < Math.min(aEnd, lastA); i++) lines.push(` ${a[i]}`);
  const aCount = Math.min(aEnd, lastA) - from;
  const bCount = Math.min(bEnd, lastB) - from;
  const range = (start: number, count: number) => `${count === 0 ? start : start + 1},${count}`;
  return [
    `diff --git a/${path} b/${path}`,
    `--- a/${path}`,
    `+++ b/${path}`,
    `@@ -${range(from, aCount)} +${range(from, bCount)} @@`,
    ...lines,
    '',
  ].join('\n');
}

/** Applies a unified diff in `dir`; rejects with git's message when it does not apply. */
export function applyPatch(dir: string, patch: string): Promise<void> {
  if (patch.trim() === '') return Promise.resolve();
  return new Promise((resolvePromise, reject) => {
    const child = spawn('git', ['apply', '--whitespace=nowarn', '-'], {
      cwd: dir,
      stdio: ['pipe', 'ignore', 'pipe'],
    });
    let err = '';
    child.stderr.on('data', (c: Buffer) => {
      err += c.toString('utf8');
    });
    child.on('error', (e) => reject(new Error(`could not run git apply: ${e.message}`)));
    child.on('close', (code) =>
      code === 0
        ? resolvePromise()
        : reject(new Error(`the patch does not apply: ${err.trim().slice(0, 500)}`)),
    );
    child.stdin.end(patch);
  });
}

/** The tasks of a JSONL file; a malformed line is an error naming its line number and field. */
export async function readTasks(file: string): Promise<TaskInstance[]> {
  const tasks: TaskInstance[] = [];
  const lines = (await readFile(file, 'utf8')).split('\n');
  for (const [i, line] of lines.entries()) {
    if (!line.trim()) continue;
    let json: unknown;
    try {
      json = JSON.parse(line);
    } catch (e) {
      throw new Error(`${file}:${i + 1}: not JSON (${(e as Error).message})`);
    }
    const parsed = TaskInstance.safeParse(json);
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      throw new Error(`${file}:${i + 1}: ${issue.path.join('.') || 'the line'}: ${issue.message}`);
    }
    tasks.push(parsed.data);
  }
  return tasks;
}

/** The instance as a runnable task with its store, or an error saying what is missing. */
export function runnable(task: TaskInstance, file: string): { task: RunnableTask; store: SnapshotStore } {
  if (!task.harness_rl)
    throw new Error(
      `${task.instance_id}: no harness_rl field (snapshot, store, test_cmd): import it first with \`harness-rl tasks import\``,
    );
  const store = isAbsolute(task.harness_rl.store)
    ? task.harness_rl.store
    : resolve(dirname(file), task.harness_rl.store);
  return { task: task as RunnableTask, store: new SnapshotStore(store) };
}
