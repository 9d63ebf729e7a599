// What the evolve end-to-end tests share: a daemon and a scratch folder per file (with the proposer
// scripts written into it), the math harness's run config with a tiny evolve block, the CLI against
// that daemon, and waiting for an evolution or a run to end.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import type { runCommand } from '../../daemon/cli/commands/run';
import { loadConfigFile } from '../../daemon/config/load';
import type { DaemonOptions } from '../../daemon/daemon';
import type { Run } from '../../daemon/protocol/entities';
import type { EvolutionDetail } from '../../daemon/protocol/evolution';
import { startTestDaemon, type TestDaemon } from './daemon';
import { EXAMPLE } from './math-harness';
import { waitFor } from './wait';

/** A proposer that makes the edits given as its first argument ([from, to] pairs, JSON) to agent.mjs. */
export const EDIT_PROPOSER = `
import { readFileSync, writeFileSync } from 'node:fs';
let text = readFileSync('agent.mjs', 'utf8');
for (const [from, to] of JSON.parse(process.argv[2])) text = text.replace(from, to);
writeFileSync('agent.mjs', text);
`;

export interface EvolveBed {
  readonly daemon: TestDaemon;
  /** The scratch folder: the scripts are in it, a test may keep its own files there. */
  readonly state: string;
  /** `command` (a CLI command) with the daemon's URL and token: its exit code and output lines. */
  cli(command: typeof runCommand, argv: string[]): Promise<{ code: number; out: string[]; err: string[] }>;
  /** The same, throwing unless it exits 0; its output lines. */
  ok(command: typeof runCommand, argv: string[]): Promise<string[]>;
}

/**
 * Before the file's tests: `before`, a daemon (`daemon: false`: none, the test starts its own) and a
 * scratch folder `harness-rl-NAME-…` holding `scripts` (file name → text); after them, both gone, then
 * `after`.
 */
export function evolveBed(
  name: string,
  scripts: Record<string, string>,
  options: {
    daemon?: Partial<DaemonOptions> | false;
    before?: () => Promise<void> | void;
    after?: () => Promise<void> | void;
  } = {},
): EvolveBed {
  let daemon: TestDaemon | undefined;
  let state = '';
  beforeAll(async () => {
    await options.before?.();
    state = mkdtempSync(join(tmpdir(), `harness-rl-${name}-`));
    for (const [file, text] of Object.entries(scripts)) writeFileSync(join(state, file), text);
    if (options.daemon !== false) daemon = await startTestDaemon(options.daemon ?? {});
  });
  afterAll(async () => {
    await daemon?.close();
    if (state) rmSync(state, { recursive: true, force: true });
    await options.after?.();
  });
  return {
    get daemon() {
      if (!daemon) throw new Error('no daemon: the bed was made with daemon: false');
      return daemon;
    },
    get state() {
      return state;
    },
    async cli(command, argv) {
      const d = this.daemon;
      const out: string[] = [];
      const err: string[] = [];
      const code = await command([...argv, '--url', d.url, '--token', d.token], {
        out: (t) => out.push(t),
        err: (t) => err.push(t),
      });
      return { code, out, err };
    },
    async ok(command, argv) {
      const r = await this.cli(command, argv);
      if (r.code !== 0) throw new Error(`${argv.join(' ')} exited ${r.code}: ${r.err.join('\n')}`);
      return r.out;
    },
  };
}

/** The smallest evolution: one generation, one child, one kept, one finalist, one attempt, no critic or pruner. */
export function tinyEvolve(proposer: string[], more: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    proposer,
    generations: 1,
    children: 1,
    keep: 1,
    finalists: 1,
    attempts: 1,
    critic: false,
    pruner: false,
    ...more,
  };
}

/** The evolve example's math harness as a run config (absolute paths), `limit` tasks, a quarter held out. */
export function mathRun(name: string, evolve: Record<string, unknown>, limit = 8): Record<string, unknown> {
  return {
    name,
    tasks: {
      file: join(EXAMPLE, '../math-agent/tasks.jsonl'),
      shuffle_seed: 0,
      limit,
      test_fraction: 0.25,
    },
    harness: {
      command: ['node', 'agent.mjs'],
      dir: join(EXAMPLE, 'harness'),
      concurrency: 4,
      timeout_s: 60,
      max_attempts: 1,
      reward: 'verifier',
      verifier: ['node', join(EXAMPLE, 'verify.mjs')],
    },
    algorithm: { n: 2, max_response_tokens: 4 },
    schedule: { groups_per_step: 2, steps: 2, seed: 0 },
    evolve,
  };
}

/**
 * examples/evolve/eval.yaml's run (relative paths: POST it with base_dir EXAMPLE) with `limit` of the
 * math tasks, `test_fraction` of them held out, and `evolve`.
 */
export async function exampleRun(
  limit: number,
  test_fraction: number,
  evolve: Record<string, unknown>,
): Promise<Record<string, unknown>> {
  const run = (await loadConfigFile(join(EXAMPLE, 'eval.yaml'))).config.run!;
  return {
    ...run,
    tasks: { file: '../math-agent/tasks.jsonl', shuffle_seed: 0, limit, test_fraction },
    evolve,
  };
}

/** `run` written as a config file in `dir`; its path. */
export function configFile(dir: string, run: Record<string, unknown>): string {
  const file = join(dir, `${run.name}.json`);
  writeFileSync(file, JSON.stringify({ run }));
  return file;
}

/** The evolution once it no longer runs. */
export function evolutionEnd(daemon: TestDaemon, id: string, ms = 300_000): Promise<EvolutionDetail> {
  return waitFor(
    `evolution ${id} to end`,
    async () => {
      const e = (await daemon.api<EvolutionDetail>('GET', `/api/evolutions/${id}`)).body;
      return e.status === 'running' ? null : e;
    },
    ms,
  );
}

/** The run once finished (a failed one throws with its error). */
export function runFinished(daemon: TestDaemon, id: string, ms = 300_000): Promise<Run> {
  return waitFor(
    `run ${id} to finish`,
    async () => {
      const run = (await daemon.api<Run>('GET', `/api/runs/${id}`)).body;
      if (run.status === 'failed') throw new Error(`run ${id} failed: ${run.error}`);
      return run.status === 'finished' ? run : null;
    },
    ms,
  );
}
