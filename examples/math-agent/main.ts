// The math agent as a command (for `harness-rl worker`): reads OPENAI_BASE_URL, OPENAI_API_KEY,
// HARNESS_RL_MODEL and HARNESS_RL_TASK (the task's JSON), runs one rollout, prints {"reward": x} last.
import { runRollout } from './agent';

async function main(): Promise<number> {
  const baseURL = process.env.OPENAI_BASE_URL;
  const taskJson = process.env.HARNESS_RL_TASK;
  if (!baseURL || !taskJson) {
    process.stderr.write('math-agent: OPENAI_BASE_URL and HARNESS_RL_TASK must be set\n');
    return 2;
  }
  let task: unknown;
  try {
    task = JSON.parse(taskJson);
  } catch {
    process.stderr.write('math-agent: HARNESS_RL_TASK is not valid JSON\n');
    return 2;
  }
  const seed = process.env.HARNESS_RL_SEED ? Number(process.env.HARNESS_RL_SEED) : undefined;
  const result = await runRollout({
    baseURL,
    apiKey: process.env.OPENAI_API_KEY ?? 'none',
    model: process.env.HARNESS_RL_MODEL ?? 'reference',
    task,
    seed: Number.isFinite(seed) ? seed : undefined,
  });
  process.stderr.write(`math-agent: final answer ${JSON.stringify(result.answer)} reward ${result.reward}\n`);
  process.stdout.write(`${JSON.stringify({ reward: result.reward })}\n`);
  return 0;
}

main().then(
  (code) => process.exit(code),
  (e: unknown) => {
    process.stderr.write(`math-agent: ${(e as Error)?.stack ?? String(e)}\n`);
    process.exit(1);
  },
);
