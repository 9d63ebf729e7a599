// The `harness-rl tasks` commands a harness calls per rollout, one task instance as JSON on stdin (its
// harness_rl.store resolved against --base, default the working folder): `checkout --dir DIR` writes
// the task's buggy tree there, `test --dir DIR` runs its tests there (sandboxed) and prints each
// failing test, `verify` reads {"task", "patch"} and prints the verifier's verdict.
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { TaskInstance } from '../../protocol/tasks';
import { commandFolders, runTestCommand } from '../../tasks/run-tests';
import { applyPatch, runnable } from '../../tasks/swe-format';
import { verifyPatch } from '../../tasks/verify';
import { UsageError } from './samples';

const stdinJson = (): unknown => {
  const text = readFileSync(0, 'utf8');
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new UsageError(`stdin is not JSON: ${(e as Error).message}`);
  }
};

function parsed<T>(schema: z.ZodType<T>, value: unknown): T {
  const r = schema.safeParse(value);
  if (!r.success) {
    const issue = r.error.issues[0]!;
    throw new UsageError(`stdin: ${issue.path.join('.') || 'the value'}: ${issue.message}`);
  }
  return r.data;
}

function options(args: string[]) {
  return parseArgs({
    args,
    options: { dir: { type: 'string' }, base: { type: 'string' }, partial: { type: 'boolean' } },
    strict: true,
  }).values;
}

/** The task on stdin, its store resolved against --base (a file name there stands for the folder). */
const taskFrom = (json: unknown, base: string | undefined) =>
  runnable(parsed(TaskInstance, json), resolve(base ?? process.cwd(), 'stdin'));

export async function checkout(args: string[]): Promise<number> {
  const values = options(args);
  if (!values.dir) throw new UsageError('--dir is required');
  const { task, store } = taskFrom(stdinJson(), values.base);
  const tree = await store.materialize(task.harness_rl.snapshot, resolve(values.dir));
  await applyPatch(resolve(values.dir), task.test_patch);
  const readOnly = [...Object.values(tree.links), ...commandFolders(task.harness_rl.test_cmd)];
  process.stdout.write(`${JSON.stringify({ dir: resolve(values.dir), read_only: readOnly })}\n`);
  return 0;
}

export async function test(args: string[]): Promise<number> {
  const values = options(args);
  if (!values.dir) throw new UsageError('--dir is required');
  const { task, store } = taskFrom(stdinJson(), values.base);
  const tree = await store.tree(task.harness_rl.snapshot);
  const run = await runTestCommand({
    dir: resolve(values.dir),
    command: task.harness_rl.test_cmd,
    timeoutMs: task.harness_rl.timeout_s * 1000,
    readOnly: Object.values(tree.links),
  });
  const failing = [...run.results].filter(([, r]) => r.status === 'failed');
  const passedCount = [...run.results.values()].filter((r) => r.status === 'passed').length;
  process.stdout.write(
    `${JSON.stringify({
      passed: passedCount,
      failed: failing.length,
      timed_out: run.timedOut,
      failing: failing.slice(0, 10).map(([id, r]) => ({ test: id, message: r.message })),
      output: run.results.size === 0 ? run.output.slice(-2000) : undefined,
    })}\n`,
  );
  return 0;
}

const VerifyInput = z.object({ task: z.unknown(), patch: z.string() });

export async function verifyStdin(args: string[]): Promise<number> {
  const values = options(args);
  const input = parsed(VerifyInput, stdinJson());
  const { task, store } = taskFrom(input.task, values.base);
  const verdict = await verifyPatch(task, store, input.patch, { partial: values.partial });
  process.stdout.write(`${JSON.stringify({ instance_id: task.instance_id, ...verdict })}\n`);
  return 0;
}
