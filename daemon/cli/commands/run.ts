// `harness-rl run start FILE [--candidate EVOLUTION/HASH] [--from-run RUN] | list | show ID | stop ID | resume ID`: manage runs
// on the running daemon over REST.
import { parseArgs } from 'node:util';
import { readReply, restFetch } from '../../api/rest-call';
import { loadConfigFile } from '../../config/load';
import { readToken } from '../../config/token';
import type { ErrorBody } from '../../protocol/api';
import type { RunConfig } from '../../protocol/config';
import type { Page, Run, RunMetrics } from '../../protocol/entities';
import type { CommandValues } from '../args';
import { defaultDataDir } from './daemon';

export const START_USAGE = `  --candidate EVOLUTION/HASH: an evolved harness (harness-rl evolve) instead of the config's
  --from-run RUN [--version N]: RUN's weights at model version N (default its latest; built-in engine)`;

const USAGE = `usage: harness-rl run start FILE [--candidate EVOLUTION/HASH] [--from-run RUN [--version N]]
       harness-rl run list [--kind training|evaluation] | show ID | stop ID | resume ID
  [--url http://127.0.0.1:4100] [--token T] [--data DIR] [--json]
${START_USAGE}`;

export class CliError extends Error {}

export function client(url: string, token: string) {
  return async <T>(method: string, path: string, body?: unknown): Promise<T> => {
    let res: Response;
    try {
      res = await restFetch(`${url.replace(/\/$/, '')}${path}`, method, token, body);
    } catch (err) {
      throw new CliError(
        `cannot reach the daemon at ${url} (${(err as Error).message}): is \`harness-rl daemon\` running?`,
      );
    }
    const { text, json } = await readReply(res); // json null when not JSON: reported below
    if (!res.ok) {
      const error = (json as ErrorBody | null)?.error;
      throw new CliError(
        error ? `${error.message}${error.field ? ` (${error.field})` : ''}` : `HTTP ${res.status}: ${text}`,
      );
    }
    return json as T;
  };
}

/** The evolved candidate a run's harness is ("<evolution>/<hash>"), if any. */
export function runCandidate(run: Run): string | null {
  return (run.config as { harness?: { candidate?: string } } | null)?.harness?.candidate ?? null;
}

function table(runs: Run[]): string {
  const candidates = runs.some((r) => runCandidate(r) !== null);
  const rows = [
    ['ID', 'NAME', 'KIND', 'STATUS', 'STEP', 'CREATED', ...(candidates ? ['CANDIDATE'] : [])],
    ...runs.map((r) => [
      r.id,
      r.name,
      r.kind,
      r.status,
      String(r.step),
      r.created_at,
      ...(candidates ? [runCandidate(r) ?? '—'] : []),
    ]),
  ];
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((row) => row[i]!.length)));
  return rows
    .map((row) =>
      row
        .map((cell, i) => cell.padEnd(widths[i]!))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

const AGREEMENT = [
  'rollout_logprob_tokens',
  'logprob_diff_mean',
  'logprob_diff_max',
  'prob_correlation',
  'tis_weight_mean',
  'tis_capped_fraction',
  'clip_fraction',
  'validation_breaches',
] as const;

/** The train/inference agreement figures of the last step that has them (null: none yet). */
export function latestAgreement(rows: RunMetrics[]): Record<string, number | null> | null {
  const last = rows.filter((r) => typeof r.metrics.rollout_logprob_tokens === 'number').at(-1);
  if (!last) return null;
  const figures: Record<string, number | null> = { step: last.step };
  for (const k of AGREEMENT) if (k in last.metrics) figures[k] = last.metrics[k] ?? null;
  return figures;
}

/**
 * The rollouts the run's steps lost (failed after all their attempts), in all and by reason, and the
 * attempts that failed by kind (retried or not); null before the first step.
 */
export function lostRollouts(rows: RunMetrics[]): Record<string, number> | null {
  if (rows.length === 0) return null;
  const sum: Record<string, number> = { lost_rollouts: 0, dropped_incomplete_groups: 0 };
  for (const r of rows)
    for (const [k, v] of Object.entries(r.metrics))
      if (typeof v === 'number' && /^(lost_rollouts|failed_attempts|dropped_incomplete_groups)(\.|$)/.test(k))
        sum[k] = (sum[k] ?? 0) + v;
  return sum;
}

const SAMPLING = ['sampling_rounds', 'sampled_groups', 'informative_groups', 'kept_groups'] as const;

/**
 * What schedule.dynamic_sampling did over the run's steps: how many steps sampled, their sampling rounds,
 * sampled, informative and kept groups in all, the mean rounds per step, and how many steps kept no
 * group (they trained on nothing); null when no step has the figures (the run does not use it).
 */
export function dynamicSampling(rows: RunMetrics[]): Record<string, number> | null {
  const steps = rows.filter((r) => typeof r.metrics.sampling_rounds === 'number');
  if (steps.length === 0) return null;
  const sum: Record<string, number> = { steps: steps.length };
  for (const k of SAMPLING) sum[k] = steps.reduce((total, r) => total + (r.metrics[k] ?? 0), 0);
  sum.mean_sampling_rounds = sum.sampling_rounds / steps.length;
  sum.steps_without_kept_groups = steps.filter((r) => r.metrics.kept_groups === 0).length;
  return sum;
}

export interface Output {
  out(text: string): void;
  err(text: string): void;
}

/** The options of every command that talks to the running daemon over REST. */
export const DAEMON_OPTIONS = {
  url: { type: 'string' },
  token: { type: 'string' },
  data: { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

/**
 * A client of the daemon that --url (else $HARNESS_RL_URL, else the local one) names, with --token
 * (else $HARNESS_RL_TOKEN, else the one the daemon wrote in --data).
 */
export function daemonClient(
  values: { url?: string; token?: string; data?: string },
  env: Record<string, string | undefined> = process.env,
) {
  const url = values.url ?? (env.HARNESS_RL_URL || 'http://127.0.0.1:4100');
  const token = values.token ?? (env.HARNESS_RL_TOKEN || readToken(values.data ?? defaultDataDir()));
  if (!token) throw new CliError('no token: pass --token, set HARNESS_RL_TOKEN, or start the daemon once');
  return client(url, token);
}

/** Where a run, evaluation or evolution starts from: an evolved harness, another run's weights. */
export const START_OPTIONS = {
  candidate: { type: 'string' },
  'from-run': { type: 'string' },
  version: { type: 'string' },
} as const;

/** The config's run section with --candidate and --from-run/--version applied. */
export function startingPoint<T extends RunConfig>(
  run: T,
  values: { candidate?: string; 'from-run'?: string; version?: string },
): T {
  if (values.version !== undefined && !values['from-run'])
    throw new CliError('--version names a model version of the run given with --from-run');
  const version = values.version === undefined ? undefined : Number(values.version);
  if (version !== undefined && !(Number.isInteger(version) && version >= 0))
    throw new CliError(`--version ${values.version}: a model version is an integer ≥ 0`);
  return {
    ...run,
    ...(values.candidate ? { harness: { ...run.harness, candidate: values.candidate } } : {}),
    ...(values['from-run']
      ? {
          model: {
            ...run.model,
            from_run: { run: values['from-run'], ...(version === undefined ? {} : { version }) },
          },
        }
      : {}),
  };
}

export const stdio: Output = {
  out: (text) => process.stdout.write(`${text}\n`),
  err: (text) => process.stderr.write(`${text}\n`),
};

export function run(argv: string[]): Promise<number> {
  return runCommand(argv, stdio);
}

const RUN_OPTIONS = { ...DAEMON_OPTIONS, ...START_OPTIONS, kind: { type: 'string' } } as const;

/** What an action of `harness-rl run` is given. */
interface Invocation {
  call: ReturnType<typeof daemonClient>;
  values: CommandValues<typeof RUN_OPTIONS>;
  out: (text: string) => void;
  /** The action's argument, or a CliError naming what it needs. */
  arg: (what: string) => string;
}

const ACTIONS: Record<string, (i: Invocation) => Promise<void>> = {
  async start({ call, values, out, arg }) {
    const { config, baseDir, file } = await loadConfigFile(arg('a config FILE'));
    if (!config.run) throw new CliError(`${file} has no run section`);
    const run = startingPoint(config.run, values);
    const created = await call<Run>('POST', '/api/runs', { config: run, base_dir: baseDir });
    const from = runCandidate(created);
    out(
      values.json
        ? JSON.stringify(created)
        : `started run ${created.id} (${created.name}): ${created.status}${from ? `, harness: candidate ${from}` : ''}`,
    );
  },
  async list({ call, values, out }) {
    const runs: Run[] = [];
    let cursor: string | null = null;
    do {
      const query = {
        limit: '1000',
        ...(cursor ? { cursor } : {}),
        ...(values.kind ? { kind: values.kind } : {}),
      };
      const page: Page<Run> = await call<Page<Run>>('GET', `/api/runs?${new URLSearchParams(query)}`);
      runs.push(...page.items);
      cursor = page.next_cursor;
    } while (cursor);
    out(values.json ? JSON.stringify(runs) : runs.length ? table(runs) : 'no runs');
  },
  async show({ call, values, out, arg }) {
    const id = encodeURIComponent(arg('a run ID'));
    const shown = await call<Run>('GET', `/api/runs/${id}`);
    const metrics = await call<RunMetrics[]>('GET', `/api/runs/${id}/metrics`);
    const validation = latestAgreement(metrics);
    const lost = lostRollouts(metrics);
    const sampling = dynamicSampling(metrics);
    out(
      JSON.stringify(
        { ...shown, metrics, validation, lost, ...(sampling ? { dynamic_sampling: sampling } : {}) },
        null,
        values.json ? undefined : 2,
      ),
    );
  },
  async stop({ call, values, out, arg }) {
    const stopped = await call<Run>('POST', `/api/runs/${encodeURIComponent(arg('a run ID'))}/stop`);
    out(values.json ? JSON.stringify(stopped) : `run ${stopped.id}: ${stopped.status}`);
  },
  async resume({ call, values, out, arg }) {
    const resumed = await call<Run>('POST', `/api/runs/${encodeURIComponent(arg('a run ID'))}/resume`);
    out(
      values.json
        ? JSON.stringify(resumed)
        : `run ${resumed.id}: ${resumed.status} from step ${resumed.step}`,
    );
  },
};

/** The command with its output lines sent to `io` (tests run it in-process). */
export async function runCommand(argv: string[], io: Output): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    options: RUN_OPTIONS,
    allowPositionals: true,
    strict: true,
  });
  const [action, argument] = positionals;
  if (values.help || !action) {
    io.out(USAGE);
    return values.help ? 0 : 2;
  }
  try {
    const act = Object.hasOwn(ACTIONS, action) ? ACTIONS[action] : undefined;
    if (!act) throw new CliError(`unknown action ${JSON.stringify(action)}\n${USAGE}`);
    const arg = (what: string) => {
      if (!argument) throw new CliError(`run ${action} needs ${what}\n${USAGE}`);
      return argument;
    };
    await act({ call: daemonClient(values), values, out: io.out, arg });
    return 0;
  } catch (err) {
    // CliError, a config file's ConfigError, the daemon's answer: each is the user's message
    if (err instanceof Error) {
      io.err(`harness-rl run: ${err.message}`);
      return 1;
    }
    throw err;
  }
}
