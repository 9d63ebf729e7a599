// The task repository (repo/), the tasks on it, and the verifiable reward: the share of the task's
// tests that pass, run with `node --test` in a sandboxed throw-away copy with a time limit.
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, isAbsolute, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { runSandboxed, type SandboxMode } from './sandbox';

export const REPO = fileURLToPath(new URL('./repo', import.meta.url));
/** How long one test run may take. */
export const TEST_TIMEOUT_MS = 30_000;

export const CodingTask = z.object({
  id: z.string(),
  /** What is wrong, as a user would report it. */
  issue: z.string(),
  /** The test file that fails now and passes once the bug is fixed. */
  test: z.string().regex(/^test\/[\w-]+\.test\.mjs$/),
});
export type CodingTask = z.infer<typeof CodingTask>;

/** The files the agent changed: repository-relative path → new content. */
export const Edits = z.record(z.string(), z.string());
export type Edits = z.infer<typeof Edits>;

/** `path` inside `dir`; an absolute path or one that leaves `dir` is refused. */
export function insideRepo(dir: string, path: string): string {
  const full = resolve(dir, path);
  const rel = relative(dir, full);
  if (isAbsolute(path) || rel.startsWith('..') || isAbsolute(rel))
    throw new Error(`${path} is outside the repository`);
  return full;
}

export async function applyEdits(dir: string, edits: Edits): Promise<void> {
  for (const [path, content] of Object.entries(edits)) {
    const full = insideRepo(dir, path);
    await mkdir(dirname(full), { recursive: true });
    await writeFile(full, content);
  }
}

export async function readRepoFile(dir: string, path: string): Promise<string> {
  return readFile(insideRepo(dir, path), 'utf8');
}

export interface TestRun {
  passed: number;
  failed: number;
  /** passed / (passed + failed); 0 when the run timed out or reported no tests. */
  reward: number;
  timedOut: boolean;
  sandboxed: boolean;
  /** The tail of the test runner's output. */
  output: string;
}

const count = (output: string, what: 'pass' | 'fail') =>
  Number(new RegExp(`^# ${what} (\\d+)$`, 'm').exec(output)?.[1] ?? 0);

/** Run one test file of the repository copy in `dir`. */
export async function runTests(
  dir: string,
  test: string,
  options: { timeoutMs?: number; sandbox?: SandboxMode } = {},
): Promise<TestRun> {
  insideRepo(dir, test);
  const ran = await runSandboxed([process.execPath, '--test', '--test-reporter=tap', test], {
    dir,
    timeoutMs: options.timeoutMs ?? TEST_TIMEOUT_MS,
    mode: options.sandbox,
  });
  const passed = ran.timedOut ? 0 : count(ran.output, 'pass');
  const failed = ran.timedOut ? 0 : count(ran.output, 'fail');
  return {
    passed,
    failed,
    reward: passed + failed > 0 ? passed / (passed + failed) : 0,
    timedOut: ran.timedOut,
    sandboxed: ran.sandboxed,
    output: ran.output,
  };
}
