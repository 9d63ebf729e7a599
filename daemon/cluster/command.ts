// A harness as a command: spawned once per claimed rollout with the rollout's endpoints in its env.
// The reward is the harness's own post, or the last stdout line `{"reward": x}`; a nonzero exit is a
// failed attempt carrying the stderr tail; an aborted attempt kills the process group.
import { spawn } from 'node:child_process';
import type { RolloutContext, RolloutOutcome } from './worker';

const TAIL = 4000;

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

/** The reward in the last non-empty stdout line, when it is `{"reward": number}`. */
export function rewardFromStdout(stdout: string): number | undefined {
  const lines = stdout.split('\n').map((l) => l.trim());
  const last = lines.filter((l) => l.length > 0).at(-1);
  if (!last) return undefined;
  try {
    const parsed = JSON.parse(last) as { reward?: unknown };
    return typeof parsed?.reward === 'number' && Number.isFinite(parsed.reward) ? parsed.reward : undefined;
  } catch {
    return undefined;
  }
}

/** A worker `rollout` function that runs `argv` (in `cwd`) for each claimed rollout. */
export function commandRollout(
  argv: string[],
  options: {
    cwd?: string;
    env?: NodeJS.ProcessEnv;
    onOutput?: (rolloutId: string, chunk: string) => void;
  } = {},
): (ctx: RolloutContext) => Promise<RolloutOutcome> {
  if (argv.length === 0) throw new Error('no harness command given');
  return (ctx) =>
    new Promise((resolve, reject) => {
      const child = spawn(argv[0], argv.slice(1), {
        cwd: options.cwd,
        env: { ...process.env, ...options.env, ...rolloutEnv(ctx) },
        stdio: ['ignore', 'pipe', 'pipe'],
        detached: process.platform !== 'win32',
      });
      let stdout = '';
      let stderr = '';
      child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
        stdout = (stdout + chunk).slice(-TAIL);
        options.onOutput?.(ctx.rollout.id, chunk);
      });
      child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
        stderr = (stderr + chunk).slice(-TAIL);
        options.onOutput?.(ctx.rollout.id, chunk);
      });
      const kill = (signal: NodeJS.Signals) => {
        if (child.exitCode !== null || child.signalCode !== null || !child.pid) return;
        try {
          // The whole process group, so `npx tsx main.ts` takes its children along.
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
      ctx.signal.addEventListener('abort', onAbort, { once: true });
      child.on('error', (err) => {
        ctx.signal.removeEventListener('abort', onAbort);
        reject(new Error(`could not start ${argv[0]}: ${err.message}`));
      });
      child.on('close', (code, signal) => {
        ctx.signal.removeEventListener('abort', onAbort);
        if (hardKill) clearTimeout(hardKill);
        if (code === 0) return resolve({ reward: rewardFromStdout(stdout) });
        const how = code !== null ? `exit code ${code}` : `signal ${signal}`;
        const tail = stderr.trim().split('\n').slice(-20).join('\n');
        reject(new Error(`harness ${how}${tail ? `: ${tail}` : ''}`));
      });
    });
}
