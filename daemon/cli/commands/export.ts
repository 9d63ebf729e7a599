// `harness-rl export --run ID [--data DIR] [--store sqlite|postgres://…] [--out FILE]`: the samples of a
// run as JSONL (one SampleJson per line, then one summary line), built from the store directly with the
// run's own algorithm settings. It holds what the run's steps trained on: the succeeded rollouts of the
// groups closed complete (not those dropped by schedule.dynamic_sampling or as incomplete, nor those of
// a step still sampling or started over). The whole export is one batch for the loss weights (like one
// `samples` invocation); validation-split rollouts are left out.
import { createWriteStream, existsSync } from 'node:fs';
import { rename } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { errorText } from '../../error-text';
import type { Rollout } from '../../protocol/entities';
import { buildSamples, runBuildOptions, trajectoriesFromStore } from '../../samples';
import type { Store } from '../../store/store';
import { sampleLines, writeLines } from './samples';

const USAGE = `usage: harness-rl export --run ID [--data DIR] [--store sqlite|postgres://…] [--out FILE]
  Writes the run's samples as JSONL (stdout without --out), then a summary line.`;

/** The ids of a run's groups its steps trained on (closed complete), page by page. */
async function trainedGroups(store: Store, runId: string): Promise<Set<string>> {
  const out = new Set<string>();
  let cursor: string | undefined;
  do {
    const page = await store.listGroups(runId, { cursor, limit: 1000 });
    for (const g of page.items) if (g.status === 'complete') out.add(g.id);
    cursor = page.next_cursor ?? undefined;
  } while (cursor);
  return out;
}

/** Every succeeded rollout of the run's trained groups, page by page. */
async function finishedRollouts(store: Store, runId: string): Promise<Rollout[]> {
  const trained = await trainedGroups(store, runId);
  const out: Rollout[] = [];
  let cursor: string | undefined;
  do {
    const page = await store.listRollouts({ run_id: runId, status: 'succeeded', cursor, limit: 500 });
    out.push(...page.items.filter((r) => r.group_id !== null && trained.has(r.group_id)));
    cursor = page.next_cursor ?? undefined;
  } while (cursor);
  return out;
}

export async function run(argv: string[]): Promise<number> {
  let values: { run?: string; data?: string; store?: string; out?: string; help?: boolean };
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        run: { type: 'string' },
        data: { type: 'string' },
        store: { type: 'string' },
        out: { type: 'string', short: 'o' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
      allowPositionals: false,
    }));
  } catch (err) {
    process.stderr.write(`harness-rl export: ${err instanceof Error ? err.message : err}\n${USAGE}\n`);
    return 2;
  }
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  if (!values.run) {
    process.stderr.write(`harness-rl export: --run ID is required\n${USAGE}\n`);
    return 2;
  }
  // the daemon command's default (it loads the whole daemon, so only when --data is not given)
  const dataDir = resolve(values.data ?? (await import('./daemon')).defaultDataDir());
  const spec = values.store ?? 'sqlite';
  const { openStore, SQLITE_FILE } = await import('../../store/open');
  if (spec === 'sqlite' && !existsSync(join(dataDir, SQLITE_FILE))) {
    process.stderr.write(
      `harness-rl export: no store in ${dataDir} (${SQLITE_FILE} not found); use --data DIR\n`,
    );
    return 1;
  }
  const store = await openStore(spec, dataDir);
  try {
    const runRow = await store.getRun(values.run);
    if (!runRow) {
      process.stderr.write(`harness-rl export: run ${values.run} not found\n`);
      return 1;
    }
    const validation = new Set((await store.listTasks(runRow.id, 'validation')).map((t) => t.id));
    const finished = await finishedRollouts(store, runRow.id);
    const training = finished.filter((r) => !(r.task_id && validation.has(r.task_id)));
    const validationRollouts = finished.length - training.length;
    const trajectories = await trajectoriesFromStore(store, training);
    const built = buildSamples(trajectories, runBuildOptions(runRow.config));
    const summary = { run_id: runRow.id, ...built.summary, validation_rollouts: validationRollouts };
    const lines = sampleLines(built, summary);
    if (values.out) {
      const target = resolve(values.out);
      const tmp = `${target}.tmp-${process.pid}`;
      const file = createWriteStream(tmp);
      await writeLines(file, lines);
      await new Promise<void>((ok, fail) => file.end((err?: Error | null) => (err ? fail(err) : ok())));
      await rename(tmp, target);
      process.stderr.write(
        `exported ${built.summary.samples} samples from ${built.summary.trajectories} rollouts of run ${runRow.id} to ${target}\n`,
      );
    } else {
      await writeLines(process.stdout, lines);
    }
    return 0;
  } catch (err) {
    process.stderr.write(`harness-rl export: ${errorText(err)}\n`);
    return 1;
  } finally {
    await store.close();
  }
}
