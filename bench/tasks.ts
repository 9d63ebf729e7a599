// Task synthesis on code nobody here wrote (inflection 0.5.1's sdist and its 455 pytest tests, set up
// by scripts/setup-synth-python.sh), in bubblewrap where it works:
//   tasks.synth  mutants_per_minute: mutants tried (a test run each) per minute; share_kept: kept /
//                tried; s_per_validated_task: synthesis plus validation wall time / valid tasks
// BENCH_TASKS_MAX mutants (default 24), seed 1; wall time on this machine, load shown beside it.
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { readTasks, runnable } from '../daemon/tasks/swe-format';
import { synthesize } from '../daemon/tasks/synth';
import { validateTask } from '../daemon/tasks/verify';
import { emit, root, round } from './emit';

export default async function bench(): Promise<void> {
  const py = join(root, '.cache/synth-python');
  if (!existsSync(`${py}/.stamp`)) {
    process.stderr.write('bench tasks: run scripts/setup-synth-python.sh first\n');
    return;
  }
  const dir = await mkdtemp(join(tmpdir(), 'bench-tasks-'));
  try {
    const out = join(dir, 'tasks.jsonl');
    const started = performance.now();
    const summary = await synthesize({
      repo: join(py, 'inflection-0.5.1'),
      testCmd: `${py}/venv/bin/python -m pytest`,
      lang: 'python',
      out,
      max: Number(process.env.BENCH_TASKS_MAX ?? 24),
      seed: 1,
    });
    let valid = 0;
    for (const t of await readTasks(out)) {
      const { task, store } = runnable(t, out);
      if ((await validateTask(task, store)) === '') valid++;
    }
    const seconds = (performance.now() - started) / 1000;
    emit('tasks.synth', {
      repo: 'inflection-0.5.1',
      tests: summary.tests,
      tried: summary.tried,
      kept: summary.kept,
      valid,
      mutants_per_minute: round(summary.mutants_per_minute, 1),
      share_kept: round(summary.share_kept, 2),
      s_per_validated_task: valid ? round(seconds / valid, 1) : null,
      sandboxed: summary.sandboxed,
      load: round(loadavg()[0], 1),
    });
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
