// `harness-rl eval CONFIG [--split S] [--attempts K] [--harness DIR] | compare A B | show ID | list | stop ID`:
// evaluate a harness on the running daemon (no training) and compare evaluations, over REST.
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { loadConfigFile } from '../../config/load';
import { comparisonText, evaluationText, f } from '../../eval/text';
import type { Page } from '../../protocol/entities';
import type { Comparison, Evaluation } from '../../protocol/evaluation';
import type { CommandValues } from '../args';
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

const USAGE = `usage: harness-rl eval CONFIG [--split train|validation|test] [--attempts K] [--harness DIR]
         [--seed N] [--pass-threshold X] [--candidate EVOLUTION/HASH] [--from-run RUN [--version N]] [--no-wait]
       harness-rl eval compare A B | show ID | list | stop ID
  [--url http://127.0.0.1:4100] [--token T] [--data DIR] [--json]
${START_USAGE}`;

export function run(argv: string[]): Promise<number> {
  return evalCommand(argv, stdio);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const OPTIONS = {
  split: { type: 'string' },
  attempts: { type: 'string' },
  harness: { type: 'string' },
  seed: { type: 'string' },
  'pass-threshold': { type: 'string' },
  'no-wait': { type: 'boolean' },
  ...DAEMON_OPTIONS,
  ...START_OPTIONS,
} as const;
type Values = CommandValues<typeof OPTIONS>;
type Call = ReturnType<typeof daemonClient>;
type Show = (value: unknown, text: string) => void;

/** compare, show, stop and list: one request each; false for any other action (a config to evaluate). */
async function lookUp(positionals: string[], call: Call, show: Show): Promise<boolean> {
  const [action, a, b] = positionals;
  const need = (x: string | undefined, what: string) => {
    if (!x) throw new CliError(`eval ${action} needs ${what}\n${USAGE}`);
    return encodeURIComponent(x);
  };
  switch (action) {
    case 'compare': {
      const c = await call<Comparison>(
        'GET',
        `/api/evaluations/compare?a=${need(a, 'A B')}&b=${need(b, 'A B')}`,
      );
      show(c, comparisonText(c));
      return true;
    }
    case 'show': {
      const e = await call<Evaluation>('GET', `/api/evaluations/${need(a, 'an ID')}`);
      show(e, evaluationText(e));
      return true;
    }
    case 'stop': {
      const e = await call<Evaluation>('POST', `/api/evaluations/${need(a, 'an ID')}/stop`);
      show(e, evaluationText(e));
      return true;
    }
    case 'list': {
      const page = await call<Page<Evaluation>>('GET', '/api/evaluations?limit=1000');
      show(
        page.items,
        page.items
          .map(
            (e) =>
              `${e.id}  ${e.status.padEnd(8)}  ${e.split.padEnd(10)}  ${f(e.summary?.mean_reward)}  ${e.name}`,
          )
          .join('\n') || 'no evaluations',
      );
      return true;
    }
  }
  return false;
}

/** Starts an evaluation of the run config in `configFile` and, unless --no-wait, waits for it to end. */
async function evaluate(configFile: string, values: Values, call: Call, io: Output): Promise<Evaluation> {
  const number = (name: string, text: string | undefined) => {
    if (text === undefined) return undefined;
    const n = Number(text);
    if (!Number.isFinite(n)) throw new CliError(`--${name} must be a number (got ${JSON.stringify(text)})`);
    return n;
  };
  const { config, baseDir, file } = await loadConfigFile(configFile);
  if (!config.run) throw new CliError(`${file} has no run section`);
  let e = await call<Evaluation>('POST', '/api/evaluations', {
    config: startingPoint(config.run, values),
    base_dir: baseDir,
    ...(values.split ? { split: values.split } : {}),
    ...(values.attempts ? { attempts: number('attempts', values.attempts) } : {}),
    ...(values.harness ? { harness_dir: resolve(values.harness) } : {}),
    ...(values.seed ? { seed: number('seed', values.seed) } : {}),
    ...(values['pass-threshold']
      ? { pass_threshold: number('pass-threshold', values['pass-threshold']) }
      : {}),
  });
  if (values['no-wait']) return e;
  if (!values.json) io.err(`evaluation ${e.id} running (${e.split} split, ${e.attempts} attempts per task)…`);
  while (e.status === 'running') {
    await sleep(500);
    e = await call<Evaluation>('GET', `/api/evaluations/${e.id}`);
  }
  return e;
}

export async function evalCommand(argv: string[], io: Output): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    options: OPTIONS,
    allowPositionals: true,
    strict: true,
  });
  if (values.help || positionals.length === 0) {
    io.out(USAGE);
    return values.help ? 0 : 2;
  }
  const show: Show = (value, text) => io.out(values.json ? JSON.stringify(value) : text);
  try {
    const call = daemonClient(values);
    if (await lookUp(positionals, call, show)) return 0;
    const e = await evaluate(positionals[0], values, call, io);
    show(e, evaluationText(e));
    return e.status === 'failed' || e.status === 'stopped' ? 1 : 0;
  } catch (err) {
    if (err instanceof Error) {
      io.err(`harness-rl eval: ${err.message}`);
      return 1;
    }
    throw err;
  }
}
