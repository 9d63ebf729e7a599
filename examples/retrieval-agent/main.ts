// The retrieval agent as a command (for `harness-rl worker`; env: examples/command.ts): runs one
// rollout and prints {"reward": f1} as its last stdout line. RETRIEVAL_AGENT_MAX_TURNS and
// RETRIEVAL_AGENT_MAX_TOKENS bound it.
import { runAsCommand } from '../command';
import { runRollout } from './agent';

runAsCommand('retrieval-agent', 'RETRIEVAL_AGENT', async (env) => {
  const r = await runRollout(env);
  const log = `${r.turns} turns, searches ${JSON.stringify(r.searches)}, answer ${JSON.stringify(r.answer)}, exact ${r.exact}`;
  return { last: { reward: r.reward }, log };
});
