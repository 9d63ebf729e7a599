// What the examples' main.ts share: the rollout from the env a worker gives a harness command
// (OPENAI_BASE_URL, OPENAI_API_KEY, HARNESS_RL_MODEL, HARNESS_RL_TASK), plus <PREFIX>_MAX_TURNS and
// <PREFIX>_MAX_TOKENS; one JSON value out as the last stdout line; a log line and any error on stderr
// (exit 1; 2 for missing input). Started with HARNESS_RL_PERSISTENT=1 (`harness.mode: persistent`) the
// same command stays up and takes rollouts one after another from stdin (the protocol is
// daemon/protocol/persistent.ts; a harness speaks it as any program would, without importing the daemon):
// no process start per rollout, and the SDK clients' connections (Node's fetch pool) stay open.
import { createInterface } from 'node:readline';

export interface RolloutEnv {
  baseURL: string;
  apiKey: string;
  model: string;
  task: unknown;
  maxTurns?: number;
  maxTokens?: number;
  /** HARNESS_RL_SEED, when set. */
  seed?: number;
}

type Rollout = (env: RolloutEnv) => Promise<{ last: unknown; log: string }>;

class MissingInput extends Error {}

function rolloutEnv(name: string, prefix: string, env: Record<string, string | undefined>): RolloutEnv {
  const baseURL = env.OPENAI_BASE_URL;
  const taskJson = env.HARNESS_RL_TASK;
  if (!baseURL || !taskJson)
    throw new MissingInput(`${name}: OPENAI_BASE_URL and HARNESS_RL_TASK must be set`);
  const number = (value: string | undefined) => {
    const n = value ? Number(value) : Number.NaN;
    return Number.isFinite(n) ? n : undefined;
  };
  return {
    baseURL,
    apiKey: env.OPENAI_API_KEY ?? 'none',
    model: env.HARNESS_RL_MODEL ?? 'reference',
    task: JSON.parse(taskJson),
    maxTurns: number(env[`${prefix}_MAX_TURNS`]),
    maxTokens: number(env[`${prefix}_MAX_TOKENS`]),
    seed: number(env.HARNESS_RL_SEED),
  };
}

const errorText = (e: unknown) => (e as Error)?.stack ?? String(e);

/** Rollouts from stdin, one at a time, each answered with one line naming it; ends with stdin. */
async function serve(name: string, prefix: string, rollout: Rollout): Promise<void> {
  for await (const line of createInterface({ input: process.stdin, crlfDelay: Number.POSITIVE_INFINITY })) {
    if (!line.trim()) continue;
    let message: { rollout_id?: unknown; env?: Record<string, string> };
    try {
      message = JSON.parse(line);
    } catch {
      message = {};
    }
    const { rollout_id } = message;
    if (typeof rollout_id !== 'string') {
      process.stderr.write(`${name}: not a rollout line: ${line.slice(0, 200)}\n`);
      continue;
    }
    let answer: Record<string, unknown>;
    try {
      const { last, log } = await rollout(rolloutEnv(name, prefix, { ...process.env, ...message.env }));
      process.stderr.write(`${name}: ${log}\n`);
      process.stdout.write(`${JSON.stringify(last)}\n`);
      const reward = (last as { reward?: unknown } | null)?.reward;
      answer = typeof reward === 'number' ? { rollout_id, reward } : { rollout_id };
    } catch (e) {
      process.stderr.write(`${name}: ${errorText(e)}\n`);
      answer = { rollout_id, error: (e as Error)?.message ?? String(e) };
    }
    process.stdout.write(`${JSON.stringify(answer)}\n`);
  }
}

/** The example's main: one rollout from the env, or (HARNESS_RL_PERSISTENT=1) rollouts from stdin. */
export function runAsCommand(name: string, prefix: string, rollout: Rollout): void {
  const once = async (): Promise<number> => {
    const { last, log } = await rollout(rolloutEnv(name, prefix, process.env));
    process.stderr.write(`${name}: ${log}\n`);
    process.stdout.write(`${JSON.stringify(last)}\n`);
    return 0;
  };
  const main =
    process.env.HARNESS_RL_PERSISTENT === '1' ? serve(name, prefix, rollout).then(() => 0) : once();
  main.then(
    (code) => process.exit(code),
    (e: unknown) => {
      process.stderr.write(e instanceof MissingInput ? `${e.message}\n` : `${name}: ${errorText(e)}\n`);
      process.exit(e instanceof MissingInput ? 2 : 1);
    },
  );
}
