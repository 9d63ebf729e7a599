// The end-to-end demo as a benchmark: embedded daemon, reference engine, example math agent, GRPO steps.
// {"bench":"demo.total","seconds":…,"steps":…,"initial_reward":…,"final_reward":…}
import { rm } from 'node:fs/promises';
import { runDemo } from '../daemon/cli/commands/demo';
import { emit, round } from './emit';

export default async function demoBench(): Promise<void> {
  const result = await runDemo({ write: () => {} });
  emit('demo.total', {
    seconds: round(result.seconds, 1),
    steps: result.steps,
    initial_reward: result.initial_reward === null ? null : round(result.initial_reward),
    final_reward: result.final_reward === null ? null : round(result.final_reward),
  });
  await rm(result.data, { recursive: true, force: true });
}
