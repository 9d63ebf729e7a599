// The coding agent's verifier (harness.verifier): reads the verifier input (stdin), takes the harness's
// edits from its last stdout line, applies them to a fresh throw-away copy of repo/ and runs the task's
// tests there (sandboxed, with a time limit). Prints {"reward": passed / total, "detail": …}.
import { readFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { z } from 'zod';
import { applyEdits, CodingTask, Edits, REPO, runTests } from './repo';
import { SandboxStartError, throwAwayCopy } from './sandbox';

const Input = z.object({ task: CodingTask, stdout: z.string() });
const HarnessLine = z.object({ edits: Edits });

async function main(): Promise<void> {
  const input = Input.parse(JSON.parse(readFileSync(0, 'utf8')));
  const last = input.stdout.trim().split('\n').at(-1) ?? '';
  const parsed = HarnessLine.safeParse(JSON.parse(last || 'null'));
  if (!parsed.success)
    throw new Error(`the harness's last stdout line is not {"edits": {…}}: ${last.slice(0, 200)}`);
  const dir = await throwAwayCopy(REPO);
  try {
    await applyEdits(dir, parsed.data.edits);
    const run = await runTests(dir, input.task.test);
    const detail = {
      passed: run.passed,
      failed: run.failed,
      timed_out: run.timedOut,
      sandboxed: run.sandboxed,
      edited: Object.keys(parsed.data.edits),
    };
    process.stdout.write(`${JSON.stringify({ reward: run.reward, detail })}\n`);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

main().catch((e: unknown) => {
  process.stderr.write(`coding-agent verifier: ${(e as Error)?.message ?? String(e)}\n`);
  // 75 (EX_TEMPFAIL): the attempt failed for the infrastructure's sake, and is retried as such.
  process.exit(e instanceof SandboxStartError ? 75 : 1);
});
