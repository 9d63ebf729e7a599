// `harness-rl <command> …`: each command lives in commands/<name>.ts and exports `run(argv)`.
import { errorText } from '../error-text';

const commands: Record<
  string,
  { summary: string; load: () => Promise<{ run(argv: string[]): Promise<number | void> }> }
> = {
  daemon: { summary: 'start the daemon (proxy, store, API)', load: () => import('./commands/daemon') },
  run: { summary: 'run start FILE | list | show ID | stop ID', load: () => import('./commands/run') },
  eval: {
    summary: 'evaluate a harness on a task split (no training) | compare A B',
    load: () => import('./commands/eval'),
  },
  evolve: {
    summary: "evolve a harness (the config's evolve block): propose, regularise, select",
    load: () => import('./commands/evolve'),
  },
  worker: {
    summary: 'claim rollouts and run the harness command on them',
    load: () => import('./commands/worker'),
  },
  samples: {
    summary: 'build training samples from trajectories (offline)',
    load: () => import('./commands/samples'),
  },
  export: { summary: 'write the samples of a run as JSONL', load: () => import('./commands/export') },
  import: {
    summary: 'past Claude Code / Codex sessions into recordings',
    load: () => import('./commands/import'),
  },
  demo: {
    summary: 'train the reference engine on the example harness',
    load: () => import('./commands/demo'),
  },
  node: {
    summary: 'the node agent on a GPU machine (inference or trainer role)',
    load: () => import('./commands/node'),
  },
  tasks: {
    summary: 'coding tasks from a repository: synth | validate | verify | import',
    load: () => import('./commands/tasks'),
  },
  schema: {
    summary: 'print the config JSON Schema (--node: the node protocol)',
    load: () => import('./commands/schema'),
  },
};

export async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  const help = name === undefined || name === 'help' || name === '--help' || name === '-h';
  const command = help ? undefined : commands[name];
  if (!command) {
    const list = Object.entries(commands)
      .map(([n, c]) => `  ${n.padEnd(9)} ${c.summary}`)
      .join('\n');
    (help ? process.stdout : process.stderr).write(
      `${help ? '' : `unknown command: ${name}\n`}usage: harness-rl <command> [options]\n${list}\n`,
    );
    return help ? 0 : 2;
  }
  const code = await (await command.load()).run(rest);
  return typeof code === 'number' ? code : 0;
}

main(process.argv.slice(2)).then(
  (code) => {
    if (code !== 0) process.exitCode = code;
  },
  (err: unknown) => {
    process.stderr.write(`harness-rl: ${errorText(err)}\n`);
    process.exitCode = 1;
  },
);
