// `harness-rl tasks synth|validate|verify|import`: coding tasks from a repository with a test suite
// (daemon/tasks/). synth shows progress on stderr and ends with one JSON summary line on stdout; validate
// and verify print one JSON line per task.
import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { importTasks } from '../../tasks/import';
import { readTasks, runnable } from '../../tasks/swe-format';
import { synthesize } from '../../tasks/synth';
import { validateTask, verifyPatch } from '../../tasks/verify';
import { positiveInt, UsageError } from './samples';
import { checkout, test, verifyStdin } from './tasks-harness';

export const TASKS_USAGE = `usage:
  harness-rl tasks synth --repo DIR --test CMD [--lang python|typescript] [--max N] [--out FILE]
      [--only PATH]… [--seed N] [--jobs N] [--timeout S] [--store DIR] [--model-url URL --model NAME]
  harness-rl tasks validate FILE [--id ID]…
  harness-rl tasks verify FILE --id ID [--patch DIFF_FILE] [--partial]
  harness-rl tasks import FILE --repos DIR --test CMD [--out FILE] [--store DIR]
for a harness, one task (JSON) on stdin, its store relative to --base DIR (default: here):
  harness-rl tasks checkout --dir DIR     the buggy tree into DIR
  harness-rl tasks test --dir DIR         run its tests in DIR, print the failing ones
  harness-rl tasks verify --stdin [--partial]   stdin {"task": …, "patch": "unified diff"}
CMD runs pytest or vitest in the repository's root, e.g. "python -m pytest" or "npx vitest run".
--model-url is an OpenAI-compatible base URL (the daemon's proxy): the model writes the problem
statements from the failing tests (HARNESS_RL_API_KEY is its key); without it they are built from them.`;

const langOf = (value: string | undefined, repoHint: string): 'python' | 'typescript' => {
  if (value === 'python' || value === 'typescript') return value;
  if (value !== undefined) throw new UsageError(`--lang must be python or typescript, got "${value}"`);
  return /vitest|jest|npm|npx|node/.test(repoHint) ? 'typescript' : 'python';
};

async function synth(args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      repo: { type: 'string' },
      test: { type: 'string' },
      lang: { type: 'string' },
      max: { type: 'string' },
      out: { type: 'string' },
      only: { type: 'string', multiple: true },
      seed: { type: 'string' },
      jobs: { type: 'string' },
      timeout: { type: 'string' },
      store: { type: 'string' },
      'model-url': { type: 'string' },
      model: { type: 'string' },
    },
    strict: true,
  });
  if (!values.repo) throw new UsageError('--repo is required');
  if (!values.test) throw new UsageError('--test is required');
  if (values['model-url'] && !values.model) throw new UsageError('--model is required with --model-url');
  const controller = new AbortController();
  const stop = () => controller.abort();
  process.once('SIGINT', stop);
  const tty = process.stderr.isTTY;
  try {
    const summary = await synthesize({
      repo: values.repo,
      testCmd: values.test,
      lang: langOf(values.lang, values.test),
      out: values.out ?? 'tasks.jsonl',
      max: positiveInt('max', values.max) ?? 200,
      only: values.only,
      seed: positiveInt('seed', values.seed),
      jobs: positiveInt('jobs', values.jobs),
      timeoutS: positiveInt('timeout', values.timeout),
      store: values.store,
      model: values['model-url']
        ? { baseURL: values['model-url'], model: values.model!, apiKey: process.env.HARNESS_RL_API_KEY }
        : undefined,
      signal: controller.signal,
      onProgress: (p) => {
        const line = `mutants tried ${p.tried}/${p.total}, kept ${p.kept}, about ${Math.round(p.etaS)} s left`;
        process.stderr.write(tty ? `\r${line}\x1b[K` : `${line}\n`);
      },
      onWarning: (m) => process.stderr.write(`${tty ? '\n' : ''}warning: ${m}\n`),
    });
    if (tty) process.stderr.write('\n');
    process.stdout.write(`${JSON.stringify(summary)}\n`);
    return summary.cancelled ? 130 : 0;
  } finally {
    process.off('SIGINT', stop);
  }
}

async function validate(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    options: { id: { type: 'string', multiple: true } },
    allowPositionals: true,
    strict: true,
  });
  const file = positionals[0];
  if (!file) throw new UsageError('validate needs the task FILE');
  const tasks = (await readTasks(file)).filter((t) => !values.id || values.id.includes(t.instance_id));
  let broken = 0;
  for (const t of tasks) {
    const { task, store } = runnable(t, file);
    const problem = await validateTask(task, store);
    if (problem) broken++;
    process.stdout.write(`${JSON.stringify({ instance_id: task.instance_id, valid: !problem, problem })}\n`);
  }
  process.stderr.write(`${tasks.length - broken} of ${tasks.length} tasks valid\n`);
  return broken > 0 ? 1 : 0;
}

async function verify(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    options: {
      id: { type: 'string' },
      patch: { type: 'string' },
      partial: { type: 'boolean' },
      stdin: { type: 'boolean' },
      base: { type: 'string' },
    },
    allowPositionals: true,
    strict: true,
  });
  if (values.stdin)
    return verifyStdin([
      ...(values.partial ? ['--partial'] : []),
      ...(values.base ? ['--base', values.base] : []),
    ]);
  const file = positionals[0];
  if (!file) throw new UsageError('verify needs the task FILE');
  if (!values.id) throw new UsageError('--id is required');
  const found = (await readTasks(file)).find((t) => t.instance_id === values.id);
  if (!found) throw new UsageError(`no task ${values.id} in ${file}`);
  const { task, store } = runnable(found, file);
  const patch = values.patch
    ? await readFile(values.patch === '-' ? '/dev/stdin' : values.patch, 'utf8')
    : '';
  const verdict = await verifyPatch(task, store, patch, { partial: values.partial });
  process.stdout.write(`${JSON.stringify({ instance_id: task.instance_id, ...verdict })}\n`);
  return 0;
}

async function importCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    options: {
      repos: { type: 'string' },
      test: { type: 'string' },
      out: { type: 'string' },
      store: { type: 'string' },
      timeout: { type: 'string' },
    },
    allowPositionals: true,
    strict: true,
  });
  const file = positionals[0];
  if (!file) throw new UsageError('import needs the instances FILE');
  if (!values.repos) throw new UsageError('--repos is required (the folder holding the repositories)');
  if (!values.test) throw new UsageError('--test is required');
  const summary = await importTasks({
    file,
    repos: values.repos,
    testCmd: values.test,
    out: values.out ?? 'tasks.jsonl',
    store: values.store,
    timeoutS: positiveInt('timeout', values.timeout),
    onRefused: (id, why) => process.stderr.write(`refused ${id}: ${why}\n`),
  });
  process.stdout.write(`${JSON.stringify(summary)}\n`);
  return summary.refused > 0 ? 1 : 0;
}

const SUB: Record<string, (args: string[]) => Promise<number>> = {
  synth,
  validate,
  verify,
  import: importCommand,
  checkout,
  test,
};

export async function run(argv: string[]): Promise<number> {
  const [sub, ...rest] = argv;
  if (!sub || sub === '--help' || sub === '-h' || sub === 'help') {
    process.stdout.write(`${TASKS_USAGE}\n`);
    return sub ? 0 : 2;
  }
  const command = SUB[sub];
  if (!command) {
    process.stderr.write(`unknown tasks command: ${sub}\n${TASKS_USAGE}\n`);
    return 2;
  }
  try {
    return await command(rest);
  } catch (e) {
    if (e instanceof UsageError || (e as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
      process.stderr.write(`${(e as Error).message}\n${TASKS_USAGE}\n`);
      return 2;
    }
    throw e;
  }
}
