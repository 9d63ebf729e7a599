// The coding agent as a command (for `harness-rl worker`; env: examples/command.ts): runs one rollout
// and prints its edits as the last stdout line, {"edits": {path: content}} (and, on a synthesised
// task, {"patch": unified diff}), for the verifier.
// CODING_AGENT_MAX_TURNS and CODING_AGENT_MAX_TOKENS bound it.
import { runAsCommand } from '../command';
import { runRollout } from './agent';

runAsCommand('coding-agent', 'CODING_AGENT', async (env) => {
  const result = await runRollout(env);
  const calls = result.toolCalls.map((c) => `${c.name}${c.ok ? '' : ' (failed)'}`).join(', ');
  return {
    last: { edits: result.edits, ...(result.patch !== undefined ? { patch: result.patch } : {}) },
    log: `${result.turns} turns, tool calls: ${calls || 'none'}`,
  };
});
