// Runs a repository's test command in the sandbox (examples/coding-agent/sandbox.ts: bubblewrap where it
// works) with a time limit and reads the result of every test from the runner's own report: pytest's
// `-rA` summary (`PASSED tests/test_x.py::test_y`, `FAILED … - message`) or vitest's JSON reporter.
// Test ids: pytest node ids; vitest `file > describe > test`.
import { accessSync, constants, existsSync, realpathSync } from 'node:fs';
import { readFile, rm } from 'node:fs/promises';
import { dirname, isAbsolute, join, relative } from 'node:path';
import { z } from 'zod';
import { runSandboxed, type SandboxMode } from '../../examples/coding-agent/sandbox';

export type Runner = 'pytest' | 'vitest';
export type Status = 'passed' | 'failed' | 'skipped';
export interface TestResult {
  status: Status;
  /** The first lines of the failure, when it failed. */
  message?: string;
}
export interface TestRun {
  results: Map<string, TestResult>;
  timedOut: boolean;
  /** The runner's exit code (null when killed). */
  code: number | null;
  seconds: number;
  sandboxed: boolean;
  /** The tail of the output, for a person reading why a run reported nothing. */
  output: string;
}

export function runnerOf(command: string): Runner {
  if (/\bpytest\b/.test(command)) return 'pytest';
  if (/\bvitest\b/.test(command)) return 'vitest';
  throw new Error(`cannot tell the test runner of "${command}": the command must run pytest or vitest`);
}

const hasViteConfig = (dir: string) =>
  ['vitest', 'vite'].some((n) =>
    ['ts', 'mts', 'cts', 'js', 'mjs', 'cjs'].some((e) => existsSync(join(dir, `${n}.config.${e}`))),
  );

/** Where the runner's report goes, in the copy (removed after reading). */
export const REPORT = '.harness-rl-test-report';

/**
 * The command with the reporter flags that give one result per test; pytest's whole output goes to the
 * report file (the summary comes last, and a sandboxed run's output keeps only its tail).
 */
export function reportingCommand(command: string, runner: Runner, dir: string): string {
  const report = join(dir, REPORT);
  // vite bundles a config file into node_modules/.vite-temp, read-only in the sandbox: load it in place
  const configLoader =
    runner === 'vitest' && !command.includes('--configLoader') && hasViteConfig(dir)
      ? ' --configLoader runner'
      : '';
  // no .pyc: a mutant of the same size written in the same second would run the cached original
  return runner === 'pytest'
    ? `export PYTHONDONTWRITEBYTECODE=1 COLUMNS=240; { ${command} -rA -p no:cacheprovider; } >${report} 2>&1`
    : `${command}${configLoader} --reporter=json --outputFile=${report}`;
}

/** `/x/venv/bin/python` → `/x/venv`; another file → its folder. */
const prefixOf = (file: string) => {
  const dir = dirname(file);
  return dir.endsWith('/bin') ? dirname(dir) : dir;
};

/** Where `name` is found on `path` (the first executable file), as a shell would run it. */
function onPath(name: string, path: string): string | undefined {
  for (const dir of path.split(':')) {
    const full = join(dir, name);
    try {
      accessSync(full, constants.X_OK);
      return full;
    } catch {}
  }
  return undefined;
}

/**
 * Read-only folders the test command needs: for `/x/venv/bin/python …` (or a `python` that PATH finds
 * there: an activated venv) the venv (`/x/venv`) and the installation its interpreter links to (pyenv's,
 * say); for other absolute paths, their folder.
 */
export function commandFolders(command: string, path = process.env.PATH ?? ''): string[] {
  const out = new Set<string>();
  const words = command.trim().split(/\s+/);
  const first =
    words[0] && !words[0].includes('/') && !words[0].includes('=') ? onPath(words[0], path) : undefined;
  for (const word of first ? [first, ...words.slice(1)] : words) {
    if (!isAbsolute(word) || !existsSync(word)) continue;
    out.add(prefixOf(word));
    out.add(prefixOf(realpathSync(word)));
  }
  return [...out];
}

const firstLines = (text: string, n = 6) => text.split('\n').slice(0, n).join('\n').slice(0, 800);

export function parsePytest(output: string): Map<string, TestResult> {
  const results = new Map<string, TestResult>();
  const summary = output.lastIndexOf('short test summary info');
  for (const line of output.slice(Math.max(0, summary)).split('\n')) {
    const m = /^(PASSED|FAILED|ERROR|XFAIL|XPASS) (\S+::\S.*?)(?: - (.*))?$/.exec(line);
    if (!m) continue;
    const [, word, id, message] = m as unknown as [string, string, string, string | undefined];
    const status: Status = word === 'PASSED' || word === 'XFAIL' ? 'passed' : 'failed';
    results.set(id, status === 'failed' ? { status, message: message ?? word } : { status });
  }
  return results;
}

const VitestReport = z.object({
  testResults: z.array(
    z.object({
      name: z.string(),
      message: z.string().optional(),
      assertionResults: z.array(
        z.object({
          ancestorTitles: z.array(z.string()),
          title: z.string(),
          status: z.string(),
          failureMessages: z.array(z.string()).nullish(),
        }),
      ),
    }),
  ),
});

export function parseVitest(report: unknown, dir: string): Map<string, TestResult> {
  const results = new Map<string, TestResult>();
  for (const file of VitestReport.parse(report).testResults) {
    const path = relative(dir, file.name);
    for (const a of file.assertionResults) {
      const id = [path, ...a.ancestorTitles, a.title].join(' > ');
      const status: Status = a.status === 'passed' ? 'passed' : a.status === 'failed' ? 'failed' : 'skipped';
      const message = a.failureMessages?.[0];
      results.set(
        id,
        status === 'failed' ? { status, message: firstLines(message ?? 'failed') } : { status },
      );
    }
  }
  return results;
}

export interface RunOptions {
  dir: string;
  command: string;
  timeoutMs: number;
  /** Folders the tests see read-only besides the system's (the links of the snapshot, a venv). */
  readOnly?: string[];
  sandbox?: SandboxMode;
}

/** Runs the test command in `dir` (a materialised snapshot) and reads every test's result. */
export async function runTestCommand(options: RunOptions): Promise<TestRun> {
  const runner = runnerOf(options.command);
  const started = performance.now();
  const ran = await runSandboxed(['sh', '-c', reportingCommand(options.command, runner, options.dir)], {
    dir: options.dir,
    timeoutMs: options.timeoutMs,
    mode: options.sandbox,
    readOnly: [...(options.readOnly ?? []), ...commandFolders(options.command)],
  });
  const seconds = (performance.now() - started) / 1000;
  let results = new Map<string, TestResult>();
  let output = ran.output;
  const report = join(options.dir, REPORT);
  if (existsSync(report)) {
    const text = await readFile(report, 'utf8');
    await rm(report, { force: true });
    if (runner === 'pytest') {
      results = parsePytest(text);
      output = `${text.slice(-4000)}${output}`;
    } else {
      try {
        results = parseVitest(JSON.parse(text), options.dir);
      } catch {}
    }
  }
  return { results, timedOut: ran.timedOut, code: ran.code, seconds, sandboxed: ran.sandboxed, output };
}

/** Whether `id` passed in `run`; a test that did not run (a collection error, a crash) did not pass. */
export const passed = (run: TestRun, id: string) => run.results.get(id)?.status === 'passed';
