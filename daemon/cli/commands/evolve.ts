// `harness-rl evolve CONFIG [--harness DIR] [--no-wait] | resume ID | show ID | stop ID`: evolve a harness on the
// running daemon (the config's evolve block) and print the candidate tree and the result.
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { loadConfigFile } from '../../config/load';
import { f } from '../../eval/text';
import type { EvolutionDetail } from '../../protocol/evolution';
import {
  CliError,
  DAEMON_OPTIONS,
  daemonClient,
  type Output,
  START_OPTIONS,
  START_USAGE,
  startingPoint,
  stdio,
} from './run';

const USAGE = `usage: harness-rl evolve CONFIG [--harness DIR] [--candidate EVOLUTION/HASH] [--from-run RUN [--version N]] [--no-wait]
       harness-rl evolve resume ID (or --resume ID) | show ID | stop ID
  [--url http://127.0.0.1:4100] [--token T] [--data DIR] [--json]
${START_USAGE}
  resume: go on with an evolution a daemon stop interrupted, from its stored generation`;

/** The tree (indented by parent), each candidate's scores and verdicts, and the result. */
export function evolutionText(e: EvolutionDetail): string {
  const lines = [`evolution ${e.id} (${e.name}): ${e.status}${e.error ? ` (${e.error})` : ''}`];
  const children = (parent: string | null) => e.candidates.filter((c) => c.parent === parent);
  const walk = (parent: string | null, depth: number) => {
    for (const c of children(parent)) {
      const rejected = Object.entries(c.verdicts).find(([, v]) => v.verdict === 'reject');
      lines.push(
        `${'  '.repeat(depth + 1)}${c.hash.slice(0, 12)} g${c.generation} ${c.status}${c.selected ? ' (kept)' : ''}  train ${f(c.train_reward)}${c.train_ci ? ` [${f(c.train_ci[0])}, ${f(c.train_ci[1])}]` : ''}  held-out ${f(c.held_out_reward)}  tokens ${f(c.tokens_per_task, 0)}  novelty ${f(c.novelty)}  ${c.stats.files}f/${c.stats.hunks}h/${c.stats.lines}l${rejected ? `  — ${rejected[0]}: ${rejected[1].reason}` : ''}`,
      );
      walk(c.hash, depth + 1);
    }
  };
  walk(null, 0);
  const r = e.result;
  if (r)
    lines.push(
      `best ${r.best ?? '— (no candidate beat the root)'}: train ${r.train_change === null ? '—' : `${r.train_change >= 0 ? '+' : ''}${f(r.train_change)}`}, held-out ${f(r.held_out.root)} → ${f(r.held_out.best)} (${r.held_out_change === null ? '—' : `${r.held_out_change >= 0 ? '+' : ''}${f(r.held_out_change)}`}), policy tokens ${r.policy_token_change === null ? '—' : `${(r.policy_token_change * 100).toFixed(0)} %`}`,
      `${r.candidates} candidates (${Object.entries(r.by_status)
        .map(([s, n]) => `${n} ${s}`)
        .join(
          ', ',
        )}), ${r.held_out_evaluations} held-out evaluations; evaluation ${r.evaluation_s.toFixed(1)} s, proposer ${r.proposer_s.toFixed(1)} s, overhead ${r.overhead_s.toFixed(2)} s`,
    );
  return lines.join('\n');
}

export function run(argv: string[]): Promise<number> {
  return evolveCommand(argv, stdio);
}

export async function evolveCommand(argv: string[], io: Output): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    options: {
      harness: { type: 'string' },
      resume: { type: 'string' },
      'no-wait': { type: 'boolean' },
      ...DAEMON_OPTIONS,
      ...START_OPTIONS,
    },
    allowPositionals: true,
    strict: true,
  });
  if (values.resume) positionals.unshift('resume', values.resume);
  if (values.help || positionals.length === 0) {
    io.out(USAGE);
    return values.help ? 0 : 2;
  }
  const show = (e: EvolutionDetail) => io.out(values.json ? JSON.stringify(e) : evolutionText(e));
  try {
    const call = daemonClient(values);
    const [action, id] = positionals;
    if (action === 'show' || action === 'stop') {
      if (!id) throw new CliError(`evolve ${action} needs an ID\n${USAGE}`);
      const path = `/api/evolutions/${encodeURIComponent(id)}`;
      if (action === 'stop') await call('POST', `${path}/stop`, {});
      show(await call<EvolutionDetail>('GET', path));
      return 0;
    }
    let started: { id: string };
    if (action === 'resume') {
      if (!id) throw new CliError(`evolve resume needs an ID\n${USAGE}`);
      started = await call('POST', `/api/evolutions/${encodeURIComponent(id)}/resume`, {});
    } else {
      const { config, baseDir, file } = await loadConfigFile(action!);
      if (!config.run) throw new CliError(`${file} has no run section`);
      started = await call<{ id: string }>('POST', '/api/evolutions', {
        config: startingPoint(config.run, values),
        base_dir: baseDir,
        ...(values.harness ? { harness_dir: resolve(values.harness) } : {}),
      });
    }
    let e = await call<EvolutionDetail>('GET', `/api/evolutions/${started.id}`);
    let shown = 0;
    while (!values['no-wait'] && e.status === 'running') {
      await new Promise((r) => setTimeout(r, 1000));
      e = await call<EvolutionDetail>('GET', `/api/evolutions/${started.id}`);
      if (!values.json && e.candidates.length !== shown) {
        shown = e.candidates.length;
        io.err(`evolution ${e.id}: ${shown} candidates so far`);
      }
    }
    show(e);
    return e.status === 'failed' || e.status === 'stopped' || e.status === 'interrupted' ? 1 : 0;
  } catch (err) {
    if (err instanceof Error) {
      io.err(`harness-rl evolve: ${err.message}`);
      return 1;
    }
    throw err;
  }
}
