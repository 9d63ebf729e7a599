// What the tool-calling examples' main.ts share: the rollout from the env `harness-rl worker` gives a
// harness command (OPENAI_BASE_URL, OPENAI_API_KEY, HARNESS_RL_MODEL, HARNESS_RL_TASK), plus
// <PREFIX>_MAX_TURNS and <PREFIX>_MAX_TOKENS; one JSON value out as the last stdout line; a log line
// and any error on stderr (exit 1; 2 for missing input).

export interface RolloutEnv {
  baseURL: string;
  apiKey: string;
  model: string;
  task: unknown;
  maxTurns?: number;
  maxTokens?: number;
}

export function runAsCommand(
  name: string,
  prefix: string,
  rollout: (env: RolloutEnv) => Promise<{ last: unknown; log: string }>,
): void {
  const main = async (): Promise<number> => {
    const baseURL = process.env.OPENAI_BASE_URL;
    const taskJson = process.env.HARNESS_RL_TASK;
    if (!baseURL || !taskJson) {
      process.stderr.write(`${name}: OPENAI_BASE_URL and HARNESS_RL_TASK must be set\n`);
      return 2;
    }
    const limit = (what: string) => {
      const value = process.env[`${prefix}_${what}`];
      return value ? Number(value) : undefined;
    };
    const { last, log } = await rollout({
      baseURL,
      apiKey: process.env.OPENAI_API_KEY ?? 'none',
      model: process.env.HARNESS_RL_MODEL ?? 'reference',
      task: JSON.parse(taskJson),
      maxTurns: limit('MAX_TURNS'),
      maxTokens: limit('MAX_TOKENS'),
    });
    process.stderr.write(`${name}: ${log}\n`);
    process.stdout.write(`${JSON.stringify(last)}\n`);
    return 0;
  };
  main().then(
    (code) => process.exit(code),
    (e: unknown) => {
      process.stderr.write(`${name}: ${(e as Error)?.stack ?? String(e)}\n`);
      process.exit(1);
    },
  );
}
