// `harness-rl worker --run ID [--url URL] [--token T] [--concurrency N] [--cwd DIR] [-- CMD …]`: claims
// rollouts of a run and runs the harness command on each (the run config's harness.command when none is
// given), then, for a run with harness.reward: verifier, the run's harness.verifier command.
import { resolve } from 'node:path';
import { readToken } from '../../config/token';
import { RunConfig } from '../../protocol/config';
import { commandRollout, harnessDir } from '../../worker/command';
import { PersistentHarness } from '../../worker/persistent';
import { runWorker } from '../../worker/worker';
import { parseCommandArgs } from '../args';
import { defaultDataDir } from './daemon';

const USAGE = `usage: harness-rl worker --run ID [--url URL] [--token TOKEN] [--data DIR] [--concurrency N] [--cwd DIR] [-- CMD ARGS…]
  --url          the daemon (default $HARNESS_RL_URL or http://127.0.0.1:4100)
  --token        the daemon token (default $HARNESS_RL_TOKEN, else DIR/token)
  --data         the daemon's data folder, for its token (default $HARNESS_RL_DATA or ~/.harness-rl)
  --concurrency  rollouts at a time (default the run's harness.concurrency)
  CMD            the harness; default the run's harness.command. It gets OPENAI_BASE_URL, OPENAI_API_KEY,
                 ANTHROPIC_BASE_URL, ANTHROPIC_API_KEY, HARNESS_RL_URL, HARNESS_RL_ROLLOUT_ID, HARNESS_RL_KEY,
                 HARNESS_RL_TASK (JSON) and HARNESS_RL_MODEL; its last stdout line may be {"reward": x}.
  --cwd          the folder the harness and the verifier run in (default the run config's folder, else
                 the current one)
  A run whose config has harness.command runs it with the daemon's own workers unless it sets
  harness.workers: external; workers started here join them.
  With harness.reward: verifier, harness.verifier runs after each harness that exits 0 (timeout
  harness.timeout_s). It gets {run_id, rollout_id, attempt_id, task, output, stdout, harness_reward} as
  JSON on stdin and in the file $HARNESS_RL_VERIFY_INPUT, and HARNESS_RL_TASK, HARNESS_RL_ROLLOUT_ID,
  HARNESS_RL_ATTEMPT_ID, HARNESS_RL_RUN_ID; it must exit 0 with {"reward": x[, "detail": …]} or x as its
  last stdout line. That reward counts (source verifier); otherwise the attempt fails.
`;

const OPTIONS = {
  run: { type: 'string' },
  url: { type: 'string' },
  token: { type: 'string' },
  data: { type: 'string' },
  concurrency: { type: 'string' },
  cwd: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

/** The run's config and the folder it was started from, or why they could not be read. */
async function readRun(
  url: string,
  token: string,
  runId: string,
): Promise<{ config: RunConfig; baseDir: string | null } | string> {
  const response = await fetch(`${url}/api/runs/${encodeURIComponent(runId)}`, {
    headers: { authorization: `Bearer ${token}` },
  });
  if (!response.ok)
    return `cannot read run ${runId} from ${url}: HTTP ${response.status} ${await response.text()}`;
  const stored = (await response.json()) as { config: unknown; base_dir?: string | null };
  return { config: RunConfig.parse(stored.config), baseDir: stored.base_dir ?? null };
}

/** Works on the run until it ends or the process is told to stop (SIGINT, SIGTERM); prints the summary. */
async function work(
  run: { id: string; url: string; token: string; config: RunConfig },
  command: string[],
  concurrency: number,
  cwd: string,
): Promise<void> {
  const { config } = run;
  const controller = new AbortController();
  const onSignal = () => controller.abort();
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  const log = (line: string) => process.stderr.write(`worker: ${line}\n`);
  const verifier = config.harness.reward === 'verifier' ? config.harness.verifier : undefined;
  log(
    `run ${run.id} at ${run.url}: ${concurrency} at a time, ${command.join(' ')}${
      verifier ? `, verifier ${verifier.join(' ')}` : ''
    }`,
  );
  const harnessCwd = harnessDir(cwd, config.harness.dir);
  const persistent =
    config.harness.mode === 'persistent' ? new PersistentHarness(command, { cwd: harnessCwd }) : null;
  try {
    const summary = await runWorker({
      daemonUrl: run.url,
      token: run.token,
      runId: run.id,
      concurrency,
      rollout: persistent ? (ctx) => persistent.rollout(ctx) : commandRollout(command, { cwd: harnessCwd }),
      cwd,
      signal: controller.signal,
      log,
    });
    process.stdout.write(`${JSON.stringify({ worker: summary })}\n`);
  } finally {
    await persistent?.close();
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}

export async function run(argv: string[]): Promise<number> {
  const split = argv.indexOf('--');
  const own = split >= 0 ? argv.slice(0, split) : argv;
  let command = split >= 0 ? argv.slice(split + 1) : [];
  const values = parseCommandArgs(own, OPTIONS, USAGE);
  if (typeof values === 'number') return values;
  if (!values.run) {
    process.stderr.write(`--run is required\n${USAGE}`);
    return 2;
  }
  const url = (values.url ?? process.env.HARNESS_RL_URL ?? 'http://127.0.0.1:4100').replace(/\/$/, '');
  const dataDir = values.data ?? defaultDataDir();
  const token = values.token ?? process.env.HARNESS_RL_TOKEN ?? readToken(dataDir);
  if (!token) {
    process.stderr.write(`no daemon token: pass --token, set HARNESS_RL_TOKEN or --data of the daemon\n`);
    return 2;
  }
  const stored = await readRun(url, token, values.run);
  if (typeof stored === 'string') {
    process.stderr.write(`${stored}\n`);
    return 1;
  }
  const { config } = stored;
  if (command.length === 0) command = config.harness.command ?? [];
  if (command.length === 0) {
    process.stderr.write(`the run has no harness.command: give one after --\n${USAGE}`);
    return 2;
  }
  const concurrency = values.concurrency
    ? Number.parseInt(values.concurrency, 10)
    : config.harness.concurrency;
  if (!Number.isInteger(concurrency) || concurrency < 1) {
    process.stderr.write(`--concurrency must be a positive integer\n`);
    return 2;
  }
  const cwd = resolve(values.cwd ?? stored.baseDir ?? '.');
  await work({ id: values.run, url, token, config }, command, concurrency, cwd);
  return 0;
}
