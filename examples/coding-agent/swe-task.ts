// Synthesised or imported tasks (SWE-bench's instance format, `harness-rl tasks synth|import`) for the
// coding agent: the workspace is the task's buggy tree (`harness-rl tasks checkout`, then a git commit
// so the agent's change is `git diff`), the run_tests tool runs the repository's tests in the sandbox
// (`tasks test`), and the verifier scores the diff on a fresh copy (`tasks verify --stdin`). The task's
// snapshot store is resolved against the working folder (the run config's folder).
import { execFile, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { z } from 'zod';

const exec = promisify(execFile);
const CLI = fileURLToPath(new URL('../../daemon/cli/main.ts', import.meta.url));

/** The fields the example reads; the rest of the instance passes through to the CLI unchanged. */
export const SweTask = z
  .object({
    instance_id: z.string(),
    problem_statement: z.string(),
    harness_rl: z.object({ snapshot: z.string(), store: z.string(), test_cmd: z.string() }).passthrough(),
  })
  .passthrough();
export type SweTask = z.infer<typeof SweTask>;

/** `harness-rl tasks …` with `input` as JSON on stdin; resolves with its last stdout line, parsed. */
export function tasksCli(args: string[], input: unknown): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', CLI, 'tasks', ...args], {
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (c: Buffer) => {
      out += c;
    });
    child.stderr.on('data', (c: Buffer) => {
      err += c;
    });
    child.on('error', reject);
    child.on('close', (code) => {
      const last = out.trim().split('\n').at(-1) ?? '';
      if (code !== 0 || !last)
        reject(new Error(`harness-rl tasks ${args[0]} failed (${code}): ${err.trim().slice(-500)}`));
      else resolve(JSON.parse(last) as Record<string, unknown>);
    });
    child.stdin.end(JSON.stringify(input));
  });
}

const git = (dir: string, ...args: string[]) =>
  exec('git', ['-C', dir, '-c', 'user.name=agent', '-c', 'user.email=agent@localhost', ...args], {
    maxBuffer: 64 << 20,
  });

/** The task's buggy tree written into `dir`, committed, so `diffOf` is the agent's change. */
export async function checkoutTask(task: SweTask, dir: string): Promise<void> {
  await tasksCli(['checkout', '--dir', dir], task);
  await git(dir, 'init', '-q');
  await git(dir, 'add', '-A');
  await git(dir, 'commit', '-qm', 'task');
}

/** The agent's change in `dir` as a unified diff (new files included). */
export async function diffOf(dir: string): Promise<string> {
  await git(dir, 'add', '-A');
  return (await git(dir, 'diff', '--cached', '--no-color', '--no-ext-diff')).stdout;
}

/** The run_tests tool on a task: the repository's tests in the sandbox, the failing ones named. */
export async function testTask(task: SweTask, dir: string): Promise<string> {
  const r = z
    .object({
      passed: z.number(),
      failed: z.number(),
      timed_out: z.boolean(),
      failing: z.array(z.object({ test: z.string(), message: z.string().optional() })),
      output: z.string().optional(),
    })
    .parse(await tasksCli(['test', '--dir', dir], task));
  if (r.timed_out) return 'the tests timed out';
  const lines = [
    `${r.passed} passed, ${r.failed} failed`,
    ...r.failing.map((f) => `FAILED ${f.test}: ${f.message ?? ''}`),
  ];
  if (r.output) lines.push(r.output);
  return lines.join('\n');
}

export function swePrompt(task: SweTask): string {
  return `Fix this issue in the repository:\n${task.problem_statement}\nUse the tools to read, edit and run the tests; answer without a tool call when you are done.`;
}
