// The retrieval agent as a command (for `harness-rl worker`): reads OPENAI_BASE_URL, OPENAI_API_KEY,
// HARNESS_RL_MODEL and HARNESS_RL_TASK, runs one rollout and prints {"reward": f1} as its last stdout
// line. RETRIEVAL_AGENT_MAX_TURNS and RETRIEVAL_AGENT_MAX_TOKENS bound it.
import { runRollout } from './agent';

async function main(): Promise<number> {
  const baseURL = process.env.OPENAI_BASE_URL;
  const taskJson = process.env.HARNESS_RL_TASK;
  if (!baseURL || !taskJson) {
    process.stderr.write('retrieval-agent: OPENAI_BASE_URL and HARNESS_RL_TASK must be set\n');
    return 2;
  }
  const limit = (name: string) => (process.env[name] ? Number(process.env[name]) : undefined);
  const result = await runRollout({
    baseURL,
    apiKey: process.env.OPENAI_API_KEY ?? 'none',
    model: process.env.HARNESS_RL_MODEL ?? 'reference',
    task: JSON.parse(taskJson),
    maxTurns: limit('RETRIEVAL_AGENT_MAX_TURNS'),
    maxTokens: limit('RETRIEVAL_AGENT_MAX_TOKENS'),
  });
  process.stderr.write(
    `retrieval-agent: ${result.turns} turns, searches ${JSON.stringify(result.searches)}, answer ${JSON.stringify(result.answer)}, exact ${result.exact}\n`,
  );
  process.stdout.write(`${JSON.stringify({ reward: result.reward })}\n`);
  return 0;
}

main().then(
  (code) => process.exit(code),
  (e: unknown) => {
    process.stderr.write(`retrieval-agent: ${(e as Error)?.stack ?? String(e)}\n`);
    process.exit(1);
  },
);
