// The verifier of a coding task: the agent's diff applied to a fresh copy of the task's snapshot, the
// repository's tests run there in the sandbox, and the reward: 1 when every FAIL_TO_PASS and
// PASS_TO_PASS test passes, else 0 (or, with `partial`, the share of those tests that pass), with the
// reason when it is below 1. A diff that does not apply, or a run past the time limit, scores 0.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { SandboxMode } from '../../examples/coding-agent/sandbox';
import type { RunnableTask, TaskVerdict } from '../protocol/tasks';
import { passed, runTestCommand, type TestRun } from './run-tests';
import type { SnapshotStore } from './snapshot';
import { applyPatch } from './swe-format';

export interface VerifyOptions {
  partial?: boolean;
  sandbox?: SandboxMode;
}

/** A fresh copy of the task's snapshot with `patch` applied, handed to `use` and removed after. */
export async function withPatchedCopy<T>(
  task: RunnableTask,
  store: SnapshotStore,
  patch: string,
  use: (dir: string, links: string[]) => Promise<T>,
): Promise<T> {
  const dir = await mkdtemp(join(tmpdir(), 'harness-rl-task-'));
  try {
    const tree = await store.materialize(task.harness_rl.snapshot, dir);
    await applyPatch(dir, task.test_patch);
    await applyPatch(dir, patch);
    return await use(dir, Object.values(tree.links));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

export function verdictOf(task: RunnableTask, run: TestRun, partial: boolean): TaskVerdict {
  const f2p = task.FAIL_TO_PASS.filter((t) => passed(run, t)).length;
  const p2p = task.PASS_TO_PASS.filter((t) => passed(run, t)).length;
  const total = task.FAIL_TO_PASS.length + task.PASS_TO_PASS.length;
  const failing = [...task.FAIL_TO_PASS, ...task.PASS_TO_PASS]
    .filter((t) => !passed(run, t))
    .slice(0, 5)
    .map((test) => ({ test, message: run.results.get(test)?.message ?? 'did not run' }));
  const all = f2p + p2p === total;
  const reason = run.timedOut
    ? `the tests ran past the time limit (${task.harness_rl.timeout_s} s)`
    : all
      ? ''
      : `${[
          f2p < task.FAIL_TO_PASS.length
            ? `${task.FAIL_TO_PASS.length - f2p} of ${task.FAIL_TO_PASS.length} FAIL_TO_PASS tests still fail`
            : '',
          p2p < task.PASS_TO_PASS.length
            ? `${task.PASS_TO_PASS.length - p2p} of ${task.PASS_TO_PASS.length} PASS_TO_PASS tests now fail`
            : '',
        ]
          .filter(Boolean)
          .join('; ')} (first: ${failing[0]?.test}: ${failing[0]?.message?.split('\n')[0]})`;
  const reward = run.timedOut ? 0 : all ? 1 : partial && total > 0 ? (f2p + p2p) / total : 0;
  return {
    reward,
    reason,
    fail_to_pass: { passed: f2p, total: task.FAIL_TO_PASS.length },
    pass_to_pass: { passed: p2p, total: task.PASS_TO_PASS.length },
    failing,
    timed_out: run.timedOut,
    sandboxed: run.sandboxed,
  };
}

const zero = (reason: string, task: RunnableTask): TaskVerdict => ({
  reward: 0,
  reason,
  fail_to_pass: { passed: 0, total: task.FAIL_TO_PASS.length },
  pass_to_pass: { passed: 0, total: task.PASS_TO_PASS.length },
  failing: [],
  timed_out: false,
  sandboxed: false,
});

/** The task's tests run on a fresh copy with `patch` applied (a patch that does not apply rejects). */
export function runPatched(
  task: RunnableTask,
  store: SnapshotStore,
  patch: string,
  sandbox?: SandboxMode,
): Promise<TestRun> {
  return withPatchedCopy(task, store, patch, (dir, links) =>
    runTestCommand({
      dir,
      command: task.harness_rl.test_cmd,
      timeoutMs: task.harness_rl.timeout_s * 1000,
      readOnly: links,
      sandbox,
    }),
  );
}

/** Scores `patch` (the agent's unified diff; empty: no change) on `task`. */
export async function verifyPatch(
  task: RunnableTask,
  store: SnapshotStore,
  patch: string,
  options: VerifyOptions = {},
): Promise<TaskVerdict> {
  try {
    return verdictOf(task, await runPatched(task, store, patch, options.sandbox), options.partial ?? false);
  } catch (e) {
    return zero((e as Error).message, task);
  }
}

/**
 * A task is valid when its gold patch makes every FAIL_TO_PASS test pass and keeps PASS_TO_PASS, and
 * without it every FAIL_TO_PASS test fails. Returns what is wrong (naming a test that shows it), or ''.
 */
export async function validateTask(
  task: RunnableTask,
  store: SnapshotStore,
  options: VerifyOptions = {},
): Promise<string> {
  const gold = await verifyPatch(task, store, task.patch, options);
  if (gold.reward < 1) return `the gold patch: ${gold.reason}`;
  const none = await runPatched(task, store, '', options.sandbox);
  const already = task.FAIL_TO_PASS.filter((t) => passed(none, t));
  if (already.length > 0)
    return `without the gold patch ${already.length} FAIL_TO_PASS test(s) already pass (first: ${already[0]})`;
  return '';
}
