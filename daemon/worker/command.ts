// A harness as a command: spawned once per claimed rollout with the rollout's endpoints in its env.
// The reward is the harness's own post, or the last stdout line `{"reward": x}`; a nonzero exit is a
// failed attempt carrying the stderr tail; an aborted attempt kills the process group.
import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { errorText } from '../error-text';
import { AttemptFailedError, EXIT_TEMPFAIL, harnessFailure, infrastructure } from '../protocol/failures';
import type { HarnessSandbox } from '../protocol/placement';
import type { RolloutContext, RolloutOutcome } from '../protocol/worker';
import { openSandbox } from './sandbox';

const STDERR_TAIL = 4000;
/** How much of a command's stdout is kept (its tail): the reward line, and what a verifier reads. */
export const STDOUT_TAIL = 64 * 1024;

/** The folder a run's harness command runs in: `harness.dir` against the config's folder, else that folder. */
export function harnessDir(baseDir: string | undefined, dir: string | undefined): string | undefined {
  return dir === undefined ? baseDir : resolve(baseDir ?? '.', dir);
}

/** The env a harness command sees for one rollout. */
export function rolloutEnv(ctx: RolloutContext): Record<string, string> {
  return {
    OPENAI_BASE_URL: ctx.openai_base_url,
    OPENAI_API_KEY: ctx.key,
    ANTHROPIC_BASE_URL: ctx.anthropic_base_url,
    ANTHROPIC_API_KEY: ctx.key,
    HARNESS_RL_URL: ctx.daemonUrl,
    HARNESS_RL_ROLLOUT_ID: ctx.rollout.id,
    HARNESS_RL_KEY: ctx.key,
    HARNESS_RL_TASK: JSON.stringify(ctx.input ?? null),
    HARNESS_RL_MODEL: ctx.model,
  };
}

/** The last non-empty line of a command's stdout. */
export function lastLine(stdout: string): string | undefined {
  return stdout
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l.length > 0)
    .at(-1);
}

/**
 * Why a command's stdout holds no reward: `its last stdout line must be <form>, not "…"` (or `and it
 * printed nothing`).
 */
export function noRewardLine(stdout: string, form: string): string {
  const last = lastLine(stdout);
  return `its last stdout line must be ${form}, ${last ? `not ${JSON.stringify(last.slice(0, 200))}` : 'and it printed nothing'}`;
}

/** The form a reward takes where a harness prints it. */
export const REWARD_FORM = '{"reward": x} with x a finite number';

/**
 * Why a harness that finished has no reward, saying what it must print and where: a spawned command's
 * last stdout line (`stdout`), a persistent one's answer line to the rollout, an SDK rollout function's
 * return value (no `stdout`). Either may post the reward instead (POST /api/rollouts/:id/reward).
 */
export function noRewardText(how: {
  mode?: 'spawn' | 'persistent';
  rolloutId: string;
  stdout?: string;
}): string {
  if (how.stdout === undefined) return 'harness gave no reward: it returned none and posted none';
  if (how.mode !== 'persistent')
    return `harness printed no reward and posted none: ${noRewardLine(how.stdout, REWARD_FORM)}`;
  const id = `"rollout_id": ${JSON.stringify(how.rolloutId)}`;
  return `persistent harness answered {${id}} with no reward and posted none: the stdout line that ends the rollout must be {${id}, "reward": x} with x a finite number, or the harness posts the reward (POST /api/rollouts/${how.rolloutId}/reward) before that line`;
}

/** The reward in the last non-empty stdout line, when it is `{"reward": number}`. */
export function rewardFromStdout(stdout: string): number | undefined {
  const last = lastLine(stdout);
  if (!last) return undefined;
  try {
    const parsed = JSON.parse(last) as { reward?: unknown };
    return typeof parsed?.reward === 'number' && Number.isFinite(parsed.reward) ? parsed.reward : undefined;
  } catch {
    return undefined;
  }
}

export interface ProcessResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** The tail of stdout (STDOUT_TAIL characters). */
  stdout: string;
  /** The tail of stderr. */
  stderr: string;
}

/**
 * Run `argv` in its own process group until it exits. When `signal` aborts, the group gets SIGTERM,
 * then SIGKILL 2 s later (so `npx tsx main.ts` takes its children along). `stdin` is written and closed.
 * Rejects only when the command cannot start.
 */
export function runProcess(
  argv: string[],
  options: {
    cwd?: string;
    env: NodeJS.ProcessEnv;
    stdin?: string;
    signal: AbortSignal;
    onOutput?: (chunk: string) => void;
  },
): Promise<ProcessResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(argv[0]!, argv.slice(1), {
      cwd: options.cwd,
      env: options.env,
      stdio: [options.stdin === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
      detached: process.platform !== 'win32',
    });
    let stdout = '';
    let stderr = '';
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      stdout = (stdout + chunk).slice(-STDOUT_TAIL);
      options.onOutput?.(chunk);
    });
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
      stderr = (stderr + chunk).slice(-STDERR_TAIL);
      options.onOutput?.(chunk);
    });
    if (child.stdin) {
      // A command that exits without reading its stdin is not an error of ours.
      child.stdin.on('error', () => {});
      child.stdin.end(options.stdin);
    }
    const kill = (signal: NodeJS.Signals) => {
      if (child.exitCode !== null || child.signalCode !== null || !child.pid) return;
      try {
        if (process.platform !== 'win32') process.kill(-child.pid, signal);
        else child.kill(signal);
      } catch {
        child.kill(signal);
      }
    };
    let hardKill: NodeJS.Timeout | undefined;
    const onAbort = () => {
      kill('SIGTERM');
      hardKill = setTimeout(() => kill('SIGKILL'), 2000);
      hardKill.unref();
    };
    if (options.signal.aborted) onAbort();
    else options.signal.addEventListener('abort', onAbort, { once: true });
    child.on('error', (err) => {
      options.signal.removeEventListener('abort', onAbort);
      reject(new Error(`could not start ${argv[0]}: ${err.message}`));
    });
    child.on('close', (code, signal) => {
      options.signal.removeEventListener('abort', onAbort);
      if (hardKill) clearTimeout(hardKill);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

/** `exit code 3: <the last 20 stderr lines>` for a command that did not exit 0. */
export function exitText(result: ProcessResult): string {
  const how = result.code !== null ? `exit code ${result.code}` : `signal ${result.signal}`;
  const tail = result.stderr.trim().split('\n').slice(-20).join('\n');
  return `${how}${tail ? `: ${tail}` : ''}`;
}

/**
 * The error of a harness command that did not exit 0: a harness failure, unless it exited 75
 * (EX_TEMPFAIL: its sandbox or something else around it failed, not the harness).
 */
export function exitError(result: ProcessResult): AttemptFailedError {
  return result.code === EXIT_TEMPFAIL
    ? new AttemptFailedError(
        `harness reported an infrastructure failure (${exitText(result)})`,
        infrastructure('reported'),
      )
    : new AttemptFailedError(`harness ${exitText(result)}`, harnessFailure('exit'));
}

/** A worker `rollout` function that runs `argv` (in `cwd`) for each claimed rollout, in its sandbox. */
export function commandRollout(
  argv: string[],
  options: {
    cwd?: string;
    env?: NodeJS.ProcessEnv;
    onOutput?: (rolloutId: string, chunk: string) => void;
    /** Default: the claim's (the run's harness.sandbox), else none. */
    sandbox?: HarnessSandbox;
  } = {},
): (ctx: RolloutContext) => Promise<RolloutOutcome> {
  if (argv.length === 0) throw new Error('no harness command given');
  return async (ctx) => {
    const env = rolloutEnv(ctx);
    const box = await openSandbox(options.sandbox ?? ctx.sandbox ?? 'none', {
      attemptId: ctx.attempt.id,
      argv,
      cwd: options.cwd ?? process.cwd(),
      envKeys: Object.keys(env),
      daemonUrl: ctx.daemonUrl,
      timeoutS: ctx.timeout_s,
    }).catch((err: unknown) => {
      throw new AttemptFailedError(
        `sandbox did not start: ${errorText(err)}`,
        infrastructure('sandbox_start'),
      );
    });
    try {
      const result = await runProcess(box.argv, {
        cwd: options.cwd,
        env: { ...process.env, ...options.env, ...env },
        signal: ctx.signal,
        onOutput: options.onOutput && ((chunk) => options.onOutput?.(ctx.rollout.id, chunk)),
      });
      if (result.code !== 0) throw exitError(result);
      return { reward: rewardFromStdout(result.stdout), stdout: result.stdout };
    } finally {
      await box.close();
    }
  };
}
