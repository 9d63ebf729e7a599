// The math agent as a command (for `harness-rl worker` and the daemon's own workers; env:
// examples/command.ts): runs one rollout and prints {"reward": x} last, or, started persistent, takes
// rollouts from stdin one after another. HARNESS_RL_SEED seeds its sampling.
import { runAsCommand } from '../command';
import { runRollout } from './agent';

runAsCommand('math-agent', 'MATH_AGENT', async (env) => {
  const result = await runRollout({ ...env, seed: env.seed });
  return {
    last: { reward: result.reward },
    log: `final answer ${JSON.stringify(result.answer)} reward ${result.reward}`,
  };
});
