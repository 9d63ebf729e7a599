// The coding agent as a command (for `harness-rl worker`): reads OPENAI_BASE_URL, OPENAI_API_KEY,
// HARNESS_RL_MODEL and HARNESS_RL_TASK, runs one rollout and prints its edits as the last stdout line,
// {"edits": {path: content}}, for the verifier. CODING_AGENT_MAX_TURNS and CODING_AGENT_MAX_TOKENS bound it.
import { runRollout } from './agent';

async function main(): Promise<number> {
  const baseURL = process.env.OPENAI_BASE_URL;
  const taskJson = process.env.HARNESS_RL_TASK;
  if (!baseURL || !taskJson) {
    process.stderr.write('coding-agent: OPENAI_BASE_URL and HARNESS_RL_TASK must be set\n');
    return 2;
  }
  const limit = (name: string) => (process.env[name] ? Number(process.env[name]) : undefined);
  const result = await runRollout({
    baseURL,
    apiKey: process.env.OPENAI_API_KEY ?? 'none',
    model: process.env.HARNESS_RL_MODEL ?? 'reference',
    task: JSON.parse(taskJson),
    maxTurns: limit('CODING_AGENT_MAX_TURNS'),
    maxTokens: limit('CODING_AGENT_MAX_TOKENS'),
  });
  const calls = result.toolCalls.map((c) => `${c.name}${c.ok ? '' : ' (failed)'}`).join(', ');
  process.stderr.write(`coding-agent: ${result.turns} turns, tool calls: ${calls || 'none'}\n`);
  process.stdout.write(`${JSON.stringify({ edits: result.edits })}\n`);
  return 0;
}

main().then(
  (code) => process.exit(code),
  (e: unknown) => {
    process.stderr.write(`coding-agent: ${(e as Error)?.stack ?? String(e)}\n`);
    process.exit(1);
  },
);
