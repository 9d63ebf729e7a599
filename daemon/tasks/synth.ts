// `tasks synth`: a repository with a test suite becomes SWE-bench-shaped tasks. The clean tree runs
// twice (tests that differ are flaky and left out), then each mutant (mutate.ts) runs in one working
// copy under a time limit; a mutant is kept when some stable passing tests now fail (FAIL_TO_PASS) and
// the others still pass (PASS_TO_PASS), and dropped when nothing fails (equivalent), when every test
// fails, when it hangs, or when an earlier kept mutant failed the same tests (duplicate).
import { appendFile, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, dirname, join, relative, resolve } from 'node:path';
import type { SandboxMode } from '../../examples/coding-agent/sandbox';
import type { TaskInstance } from '../protocol/tasks';
import { shuffled } from '../random';
import { applyMutant, type Lang, type Mutant, mutantsOf } from './mutate';
import { passed, runTestCommand, type TestRun } from './run-tests';
import { readRepo, SnapshotStore } from './snapshot';
import { type StatementModel, statementFromModel, statementFromTests } from './statement';
import { unifiedDiff } from './swe-format';

export interface SynthOptions {
  repo: string;
  testCmd: string;
  lang: Lang;
  out: string;
  /** At most this many mutants are tried (after a seeded shuffle). */
  max: number;
  /** Only mutate files under these repository-relative paths. */
  only?: string[];
  seed?: number;
  /** Mutants run at once, each in its own working copy (default 1). */
  jobs?: number;
  /** Per mutant test run; default: 3 × the slower clean run + 5 s. */
  timeoutS?: number;
  store?: string;
  model?: StatementModel;
  sandbox?: SandboxMode;
  signal?: AbortSignal;
  onProgress?: (p: SynthProgress) => void;
  /** Warnings (a statement model that failed, …). */
  onWarning?: (message: string) => void;
}

export type Drop = 'equivalent' | 'duplicate' | 'timeout' | 'breaks-all';
export interface SynthProgress {
  tried: number;
  total: number;
  kept: number;
  /** Estimated seconds left. */
  etaS: number;
}
export interface SynthSummary {
  repo: string;
  lang: Lang;
  out: string;
  tests: number;
  flaky: number;
  mutants_found: number;
  tried: number;
  kept: number;
  share_kept: number;
  dropped: Record<Drop, number>;
  seconds: number;
  mutants_per_minute: number;
  sandboxed: boolean;
  cancelled: boolean;
}

export function isTestFile(path: string, lang: Lang): boolean {
  const parts = path.split('/');
  const name = parts.at(-1)!;
  if (parts.some((p) => p === 'tests' || p === 'test' || p === '__tests__' || p === 'docs')) return true;
  if (lang === 'python') return /^test_.*\.py$|_test\.py$|^conftest\.py$|^setup\.py$/.test(name);
  return /\.(test|spec)\.tsx?$|\.d\.ts$|\.config\.ts$/.test(name);
}

const isSource = (path: string, lang: Lang) =>
  (lang === 'python' ? /\.py$/ : /\.tsx?$/).test(path) && !isTestFile(path, lang);

/** Tests that passed in both clean runs, and how many differed between them. */
export function stablePassing(a: TestRun, b: TestRun): { stable: string[]; flaky: number } {
  const ids = new Set([...a.results.keys(), ...b.results.keys()]);
  const stable: string[] = [];
  let flaky = 0;
  for (const id of ids) {
    if (passed(a, id) && passed(b, id)) stable.push(id);
    else if (passed(a, id) !== passed(b, id)) flaky++;
  }
  return { stable: stable.sort(), flaky };
}

type Files = Map<string, { data: Buffer; x: boolean }>;
type Run = (timeoutMs: number) => Promise<TestRun>;

/** The clean tree run twice: the stable passing tests, the flaky count, the time limit per mutant. */
async function baseline(run: Run, o: SynthOptions) {
  const first = await run((o.timeoutS ?? 600) * 1000);
  const second = await run((o.timeoutS ?? 600) * 1000);
  const { stable, flaky } = stablePassing(first, second);
  if (stable.length === 0)
    throw new Error(
      `no test passes on the clean tree with \`${o.testCmd}\` (exit ${first.code}${first.timedOut ? ', timed out' : ''}): ${first.output.slice(-600)}`,
    );
  const timeoutMs = (o.timeoutS ?? 3 * Math.max(first.seconds, second.seconds) + 5) * 1000;
  return { stable, flaky, timeoutMs, sandboxed: first.sandboxed };
}

/** Every mutant of the source files (under --only), in a seeded order. */
async function mutantsToTry(files: Files, o: SynthOptions): Promise<{ found: number; chosen: Mutant[] }> {
  const mutants: Mutant[] = [];
  for (const [path, f] of files) {
    if (!isSource(path, o.lang)) continue;
    if (o.only && !o.only.some((p) => path === p || path.startsWith(`${p.replace(/\/$/, '')}/`))) continue;
    mutants.push(...(await mutantsOf(path, f.data.toString('utf8'), o.lang)));
  }
  return { found: mutants.length, chosen: shuffled(mutants, o.seed ?? 1).slice(0, o.max) };
}

export async function synthesize(o: SynthOptions): Promise<SynthSummary> {
  const started = performance.now();
  const repo = resolve(o.repo);
  const storeDir = resolve(o.store ?? join(dirname(resolve(o.out)), 'snapshots'));
  const store = new SnapshotStore(storeDir);
  const { files, links } = await readRepo(repo, [resolve(o.out), storeDir]);
  const clean = await store.put(files, links);
  const readOnly = Object.values(links);
  // one working copy per job; a mutant is written into one, run, and the file put back
  const works: string[] = [];
  const runIn =
    (dir: string): Run =>
    (timeoutMs) =>
      runTestCommand({ dir, command: o.testCmd, timeoutMs, readOnly, sandbox: o.sandbox });
  try {
    for (let i = 0; i < Math.max(1, o.jobs ?? 1); i++) {
      works.push(await mkdtemp(join(tmpdir(), 'harness-rl-synth-')));
      await store.materialize(clean, works[i]!);
    }
    const base = await baseline(runIn(works[0]!), o);
    const { found, chosen } = await mutantsToTry(files, o);
    await mkdir(dirname(resolve(o.out)), { recursive: true });
    await writeFile(o.out, '');
    const summary: SynthSummary = {
      repo,
      lang: o.lang,
      out: o.out,
      tests: base.stable.length,
      flaky: base.flaky,
      mutants_found: found,
      tried: 0,
      kept: 0,
      share_kept: 0,
      dropped: { equivalent: 0, duplicate: 0, timeout: 0, 'breaks-all': 0 },
      seconds: 0,
      mutants_per_minute: 0,
      sandboxed: base.sandboxed,
      cancelled: false,
    };
    const seen = new Set<string>();
    const loopStart = performance.now();
    let next = 0;
    const job = async (dir: string): Promise<void> => {
      while (next < chosen.length) {
        if (o.signal?.aborted) {
          summary.cancelled = true;
          return;
        }
        const m = chosen[next++]!;
        const original = files.get(m.file)!.data.toString('utf8');
        const mutated = applyMutant(original, m);
        await writeFile(join(dir, m.file), mutated);
        const result = await runIn(dir)(base.timeoutMs).finally(() => writeFile(join(dir, m.file), original));
        summary.tried++;
        // synchronous: two jobs never both keep the same failing set
        const verdict = classify(result, base.stable, seen);
        if (typeof verdict === 'string') summary.dropped[verdict]++;
        else {
          const task = await taskOf({ o, store, storeDir, files, links, m, mutated, result, ...verdict });
          await appendFile(o.out, `${JSON.stringify(task)}\n`);
          summary.kept++;
        }
        const per = (performance.now() - loopStart) / 1000 / summary.tried;
        o.onProgress?.({
          tried: summary.tried,
          total: chosen.length,
          kept: summary.kept,
          etaS: per * (chosen.length - summary.tried),
        });
      }
    };
    await Promise.all(works.map(job));
    summary.seconds = (performance.now() - started) / 1000;
    summary.share_kept = summary.tried ? summary.kept / summary.tried : 0;
    summary.mutants_per_minute = summary.tried / ((performance.now() - loopStart) / 60_000);
    return summary;
  } finally {
    await Promise.all(works.map((w) => rm(w, { recursive: true, force: true })));
  }
}

/** Why a mutant's run is dropped, or its FAIL_TO_PASS and PASS_TO_PASS (`seen` gains its failing set). */
export function classify(
  result: TestRun,
  stable: string[],
  seen: Set<string>,
): Drop | { failToPass: string[]; passToPass: string[] } {
  if (result.timedOut) return 'timeout';
  const failToPass = stable.filter((t) => !passed(result, t));
  const passToPass = stable.filter((t) => passed(result, t));
  if (failToPass.length === 0) return 'equivalent';
  if (passToPass.length === 0) return 'breaks-all';
  const key = failToPass.join('\n');
  if (seen.has(key)) return 'duplicate';
  seen.add(key);
  return { failToPass, passToPass };
}

async function taskOf(a: {
  o: SynthOptions;
  store: SnapshotStore;
  storeDir: string;
  files: Files;
  links: Record<string, string>;
  m: Mutant;
  mutated: string;
  result: TestRun;
  failToPass: string[];
  passToPass: string[];
}): Promise<TaskInstance> {
  const name = basename(resolve(a.o.repo));
  const original = a.files.get(a.m.file)!.data.toString('utf8');
  const tree = new Map(a.files);
  tree.set(a.m.file, { data: Buffer.from(a.mutated), x: a.files.get(a.m.file)!.x });
  const snapshot = await a.store.put(tree, a.links);
  let statement = statementFromTests(a.failToPass, a.result.results);
  let by = 'tests';
  if (a.o.model) {
    try {
      statement = await statementFromModel(a.o.model, a.failToPass, a.result.results, a.o.signal);
      by = a.o.model.model;
    } catch (e) {
      a.o.onWarning?.(`statement from the tests instead: ${(e as Error).message}`);
    }
  }
  const storeRel = relative(dirname(resolve(a.o.out)), a.storeDir) || '.';
  return {
    instance_id: `${name}__${a.m.operator}-${snapshot.slice(0, 10)}`,
    repo: name,
    base_commit: snapshot,
    patch: unifiedDiff(a.m.file, a.mutated, original),
    test_patch: '',
    problem_statement: statement,
    FAIL_TO_PASS: a.failToPass,
    PASS_TO_PASS: a.passToPass,
    created_at: new Date().toISOString(),
    harness_rl: {
      snapshot,
      store: storeRel,
      test_cmd: a.o.testCmd,
      timeout_s: Math.ceil(Math.max(30, a.result.seconds * 5)),
      lang: a.o.lang,
      mutation: { file: a.m.file, line: a.m.line, operator: a.m.operator, description: a.m.description },
      statement_by: by,
    },
  };
}
