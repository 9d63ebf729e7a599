// One coding-agent CLI of agents.ts as an evolution proposer (`tsx propose.ts AGENT MODEL`):
// it runs in the working copy the daemon made, pointed at the endpoints the daemon gives a proposer (a
// recording: OPENAI_BASE_URL, ANTHROPIC_BASE_URL and the key), with a throw-away HOME, and is asked to
// improve the harness with the brief ($HARNESS_RL_BRIEF) as its prompt.
import { spawn } from 'node:child_process';
import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { AGENTS, AGENTS_BIN, TASK_MARKER } from './agents';

async function main(): Promise<void> {
  const [id, model] = process.argv.slice(2);
  const agent = AGENTS.find((a) => a.id === id);
  if (!agent || !model)
    throw new Error(`usage: propose.ts AGENT MODEL (agents: ${AGENTS.map((a) => a.id).join(', ')})`);
  const work = process.cwd();
  const home = await mkdtemp(join(tmpdir(), 'harness-rl-proposer-home-'));
  const setup = await agent.setup({
    home,
    work,
    model,
    key: process.env.OPENAI_API_KEY ?? '',
    openaiBaseUrl: process.env.OPENAI_BASE_URL ?? '',
    anthropicBaseUrl: process.env.ANTHROPIC_BASE_URL ?? '',
  });
  const brief = await readFile(process.env.HARNESS_RL_BRIEF ?? '', 'utf8');
  const prompt = `${TASK_MARKER} ${work} . Improve the harness in this folder (agent.mjs) as the brief asks.\n\n${brief}`;
  const child = spawn(resolve(AGENTS_BIN, agent.bin), setup.args(prompt), {
    cwd: work,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home, ...setup.env },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  child.on('close', (code) => process.exit(code ?? 1));
}

main().catch((err: unknown) => {
  process.stderr.write(`propose: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
