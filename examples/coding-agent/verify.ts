// The coding agent's verifier (harness.verifier): reads the verifier input (stdin), takes the harness's
// edits from its last stdout line, applies them to a fresh throw-away copy of repo/ and runs the task's
// tests there (sandboxed, with a time limit). Prints {"reward": passed / total, "detail": …}. On a
// synthesised task it scores the harness's diff with `harness-rl tasks verify` instead: 1 when every
// FAIL_TO_PASS and PASS_TO_PASS test passes (CODING_AGENT_PARTIAL=1: the share that passes), the reason.
import { readFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { z } from 'zod';
import { ExampleTask } from './agent';
import { applyEdits, type CodingTask, Edits, REPO, runTests } from './repo';
import { SandboxStartError, throwAwayCopy } from './sandbox';
import { type SweTask, tasksCli } from './swe-task';

const Input = z.object({ task: ExampleTask, stdout: z.string() });
const HarnessLine = z.object({ edits: Edits, patch: z.string().optional() });

async function verifyShipped(task: CodingTask, edits: Edits): Promise<unknown> {
  const dir = await throwAwayCopy(REPO);
  try {
    await applyEdits(dir, edits);
    const run = await runTests(dir, task.test);
    const detail = {
      passed: run.passed,
      failed: run.failed,
      timed_out: run.timedOut,
      sandboxed: run.sandboxed,
      edited: Object.keys(edits),
    };
    return { reward: run.reward, detail };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

async function verifySynthesised(task: SweTask, patch: string): Promise<unknown> {
  const partial = process.env.CODING_AGENT_PARTIAL === '1' ? ['--partial'] : [];
  const {
    reward,
    instance_id: _id,
    ...detail
  } = await tasksCli(['verify', '--stdin', ...partial], { task, patch });
  return { reward, detail };
}

async function main(): Promise<void> {
  const input = Input.parse(JSON.parse(readFileSync(0, 'utf8')));
  const last = input.stdout.trim().split('\n').at(-1) ?? '';
  const parsed = HarnessLine.safeParse(JSON.parse(last || 'null'));
  if (!parsed.success)
    throw new Error(`the harness's last stdout line is not {"edits": {…}}: ${last.slice(0, 200)}`);
  const task = input.task;
  const result =
    'instance_id' in task
      ? await verifySynthesised(task, parsed.data.patch ?? '')
      : await verifyShipped(task, parsed.data.edits);
  process.stdout.write(`${JSON.stringify(result)}\n`);
}

main().catch((e: unknown) => {
  process.stderr.write(`coding-agent verifier: ${(e as Error)?.message ?? String(e)}\n`);
  // 75 (EX_TEMPFAIL): the attempt failed for the infrastructure's sake, and is retried as such.
  process.exit(e instanceof SandboxStartError ? 75 : 1);
});
