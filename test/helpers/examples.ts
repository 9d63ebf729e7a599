// Running an example of examples/ in an end-to-end test: a run from its run.yaml (external workers,
// patched), and its commands (main.ts, verify.ts) as child processes with the env and stdin given.
import { execFile } from 'node:child_process';
import { join, resolve } from 'node:path';
import { expect } from 'vitest';
import { run as worker } from '../../daemon/cli/commands/worker';
import { loadConfigFile } from '../../daemon/config/load';
import type { Run } from '../../daemon/protocol/entities';
import type { TestDaemon } from './daemon';

/** The folder of examples/<name>. */
export const exampleDir = (name: string) => resolve(__dirname, '../../examples', name);

/** A run of the example's run.yaml with `harness.workers: external`, after `patch` changed its config. */
export async function createExampleRun(
  daemon: TestDaemon,
  name: string,
  // biome-ignore lint/suspicious/noExplicitAny: tests patch the config loosely
  patch: (config: Record<string, any>) => void,
): Promise<Run> {
  const { config } = await loadConfigFile(join(exampleDir(name), 'run.yaml'));
  const run = structuredClone(config.run) as Record<string, any>;
  run.harness.workers = 'external';
  patch(run);
  const res = await daemon.api<Run>('POST', '/api/runs', { config: run, base_dir: exampleDir(name) });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body;
}

/**
 * A small run of the example's run.yaml (2 steps of 1 group of 2 rollouts) worked to its end by
 * `harness-rl worker`, its harness commands given `env` too.
 */
export async function workSmallExampleRun(
  daemon: TestDaemon,
  name: string,
  env: Record<string, string>,
): Promise<Run> {
  const run = await createExampleRun(daemon, name, (c) => {
    c.algorithm.n = 2;
    c.schedule.steps = 2;
    c.schedule.groups_per_step = 1;
  });
  Object.assign(process.env, env);
  try {
    expect(await worker(['--run', run.id, '--url', daemon.url, '--token', daemon.token])).toBe(0);
  } finally {
    for (const key of Object.keys(env)) delete process.env[key];
  }
  return run;
}

/** Runs `npx tsx <script>` of the example (as node --import tsx) to its end; rejects on a nonzero exit. */
export function runExampleScript(
  name: string,
  script: string,
  options: { env?: Record<string, string>; stdin?: string } = {},
): Promise<{ stdout: string; stderr: string }> {
  return new Promise((done, fail) => {
    const child = execFile(
      process.execPath,
      ['--import', 'tsx', script],
      { cwd: exampleDir(name), env: { ...process.env, ...options.env } },
      (err, stdout, stderr) =>
        err ? fail(new Error(`${script}: ${err.message}\n${stderr}`)) : done({ stdout, stderr }),
    );
    child.stdin!.end(options.stdin ?? '');
  });
}

/** The env a harness command gets for a standalone rollout (POST /api/rollouts). */
export function rolloutEnv(
  rollout: { openai_base_url: string; key: string },
  model: string,
  task: unknown,
): Record<string, string> {
  return {
    OPENAI_BASE_URL: rollout.openai_base_url,
    OPENAI_API_KEY: rollout.key,
    HARNESS_RL_MODEL: model,
    HARNESS_RL_TASK: JSON.stringify(task),
  };
}
