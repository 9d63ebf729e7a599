// `harness-rl eval CONFIG [--split S] [--attempts K] [--harness DIR] | compare A B | show ID | list | stop ID`:
// evaluate a harness on the running daemon (no training) and compare evaluations, over REST.
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { loadConfigFile } from '../../config/load';
import { readToken } from '../../config/token';
import type { Page } from '../../protocol/entities';
import type { Comparison, Evaluation } from '../../protocol/evaluation';
import { defaultDataDir } from './daemon';
import { CliError, client, type Output } from './run';

const USAGE = `usage: harness-rl eval CONFIG [--split train|validation|test] [--attempts K] [--harness DIR]
         [--seed N] [--pass-threshold X] [--no-wait]
       harness-rl eval compare A B | show ID | list | stop ID
  [--url http://127.0.0.1:4100] [--token T] [--data DIR] [--json]`;

const f = (x: number | null | undefined, digits = 3) =>
  x === null || x === undefined ? '—' : x.toFixed(digits);

/** The figures of a finished evaluation, as lines a person reads. */
export function evaluationText(e: Evaluation): string {
  const s = e.summary;
  const head = `evaluation ${e.id} (${e.name}): ${e.status}${e.error ? ` (${e.error})` : ''}`;
  if (!s) return head;
  const lines = [
    head,
    `  split ${e.split}, ${s.tasks} tasks × ${s.attempts} attempts, model version ${e.model_version ?? '—'}, seed ${e.seed}`,
    `  mean reward ${f(s.mean_reward)}  95% CI [${f(s.ci_low)}, ${f(s.ci_high)}]  (${s.ci})`,
    `  pass@1 ${f(s.pass_at_1)}  pass@${s.attempts} ${f(s.pass_at_k)}  (pass: reward ≥ ${s.pass_threshold})`,
    `  policy tokens per task ${f(s.policy_tokens_per_task, 1)} (prompt ${f(s.prompt_tokens_per_task, 1)} + completion ${f(s.completion_tokens_per_task, 1)}), calls ${f(s.calls_per_task, 2)}`,
    `  wall ${s.wall_s.toFixed(1)} s, ${s.scored} attempts scored, ${s.unscored_tasks} tasks unscored`,
  ];
  const failures = Object.entries(s.failures);
  if (failures.length) lines.push('  failures:', ...failures.map(([r, n]) => `    ${n} × ${r}`));
  return lines.join('\n');
}

export function comparisonText(c: Comparison): string {
  const lines = [
    `compare ${c.a} (A) → ${c.b} (B): ${c.paired_tasks} paired tasks`,
    `  mean reward change (B − A) ${f(c.mean_diff)}  95% CI [${f(c.ci_low)}, ${f(c.ci_high)}]  ${c.significant ? 'significant' : 'not significant'}`,
    `  sign test: B better on ${c.sign_test.wins}, worse on ${c.sign_test.losses}, tied on ${c.sign_test.ties}; p = ${c.sign_test.p.toPrecision(3)}`,
    `  policy tokens per task: A ${f(c.tokens.a_per_task, 1)}  B ${f(c.tokens.b_per_task, 1)}  change ${c.tokens.change === null ? '—' : `${(c.tokens.change * 100).toFixed(1)} %`}`,
    `  (${c.method})`,
  ];
  return lines.join('\n');
}

const stdio: Output = {
  out: (text) => process.stdout.write(`${text}\n`),
  err: (text) => process.stderr.write(`${text}\n`),
};

export function run(argv: string[]): Promise<number> {
  return evalCommand(argv, stdio);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function evalCommand(argv: string[], io: Output): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    options: {
      split: { type: 'string' },
      attempts: { type: 'string' },
      harness: { type: 'string' },
      seed: { type: 'string' },
      'pass-threshold': { type: 'string' },
      'no-wait': { type: 'boolean' },
      url: { type: 'string' },
      token: { type: 'string' },
      data: { type: 'string' },
      json: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
    allowPositionals: true,
    strict: true,
  });
  if (values.help || positionals.length === 0) {
    io.out(USAGE);
    return values.help ? 0 : 2;
  }
  const url = values.url ?? (process.env.HARNESS_RL_URL || 'http://127.0.0.1:4100');
  const token = values.token ?? (process.env.HARNESS_RL_TOKEN || readToken(values.data ?? defaultDataDir()));
  const show = (value: unknown, text: string) => io.out(values.json ? JSON.stringify(value) : text);
  try {
    if (!token) throw new CliError('no token: pass --token, set HARNESS_RL_TOKEN, or start the daemon once');
    const call = client(url, token);
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
        return 0;
      }
      case 'show': {
        const e = await call<Evaluation>('GET', `/api/evaluations/${need(a, 'an ID')}`);
        show(e, evaluationText(e));
        return 0;
      }
      case 'stop': {
        const e = await call<Evaluation>('POST', `/api/evaluations/${need(a, 'an ID')}/stop`);
        show(e, evaluationText(e));
        return 0;
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
        return 0;
      }
    }
    const number = (name: string, text: string | undefined) => {
      if (text === undefined) return undefined;
      const n = Number(text);
      if (!Number.isFinite(n)) throw new CliError(`--${name} must be a number (got ${JSON.stringify(text)})`);
      return n;
    };
    const { config, baseDir, file } = await loadConfigFile(action!);
    if (!config.run) throw new CliError(`${file} has no run section`);
    let e = await call<Evaluation>('POST', '/api/evaluations', {
      config: config.run,
      base_dir: baseDir,
      ...(values.split ? { split: values.split } : {}),
      ...(values.attempts ? { attempts: number('attempts', values.attempts) } : {}),
      ...(values.harness ? { harness_dir: resolve(values.harness) } : {}),
      ...(values.seed ? { seed: number('seed', values.seed) } : {}),
      ...(values['pass-threshold']
        ? { pass_threshold: number('pass-threshold', values['pass-threshold']) }
        : {}),
    });
    if (!values['no-wait']) {
      if (!values.json)
        io.err(`evaluation ${e.id} running (${e.split} split, ${e.attempts} attempts per task)…`);
      while (e.status === 'running') {
        await sleep(500);
        e = await call<Evaluation>('GET', `/api/evaluations/${e.id}`);
      }
    }
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
