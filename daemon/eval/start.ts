// Starting an evaluation (the REST route and the evolution loop share it): read and split the config's
// tasks, store a run that never trains with them, the evaluation, and start it; and waiting for one.
import { resolve } from 'node:path';
import { ApiError } from '../api/errors';
import { settleRunConfig } from '../api/run-config';
import { readTasks } from '../api/tasks';
import { holdSecrets, splitSecrets } from '../config/held-secrets';
import type { DaemonContext } from '../context';
import { errorText } from '../error-text';
import type { CreateEvaluationBody } from '../protocol/evaluation';
import type { StoredEvaluation } from '../store/store';

export async function startEvaluation(
  ctx: DaemonContext,
  body: CreateEvaluationBody,
): Promise<StoredEvaluation> {
  const tasks = await readTasks(body.config, body.base_dir);
  if (!tasks.some((t) => t.split === body.split))
    throw new ApiError(400, 'invalid_tasks', `the config's tasks have no ${body.split} split`, 'split');
  const baseDir = body.base_dir === undefined ? undefined : resolve(body.base_dir);
  const harnessDir = body.harness_dir !== undefined ? resolve(baseDir ?? '.', body.harness_dir) : undefined;
  const from = await settleRunConfig(ctx, body.config, harnessDir !== undefined);
  const config = { ...from, harness: { ...from.harness, ...(harnessDir ? { dir: harnessDir } : {}) } };
  const name = body.name ?? `eval ${body.config.name} ${body.split}`;
  const { value: stored, held } = splitSecrets(config);
  const run = await ctx.store.createRun({
    name,
    kind: 'evaluation',
    config: stored,
    ...(baseDir ? { base_dir: baseDir } : {}),
  });
  holdSecrets(ctx.dataDir, `run:${run.id}`, held);
  await ctx.store.createTasks(run.id, tasks);
  const evaluation = await ctx.store.createEvaluation({
    name,
    run_id: run.id,
    split: body.split,
    attempts: body.attempts,
    harness_dir: harnessDir ?? null,
    seed: body.seed,
    spec: { pass_threshold: body.pass_threshold, infrastructure_retries: body.infrastructure_retries },
  });
  if (ctx.runs) {
    try {
      await ctx.runs.start(run.id);
    } catch (err) {
      const message = errorText(err);
      await ctx.store.updateRun(run.id, { status: 'failed', error: message });
      return ctx.store.updateEvaluation(evaluation.id, { status: 'failed', error: message });
    }
  }
  return evaluation;
}

/** Resolves with the evaluation once it is no longer running (or when `signal` aborts: rejects). */
export async function evaluationDone(
  ctx: DaemonContext,
  id: string,
  signal?: AbortSignal,
): Promise<StoredEvaluation> {
  for (;;) {
    if (signal?.aborted) throw new Error('stopped');
    const e = await ctx.store.getEvaluation(id);
    if (!e) throw new Error(`evaluation ${id} is gone`);
    if (e.status !== 'running') return e;
    await new Promise<void>((r) => {
      const unsubscribe = ctx.store.subscribe(
        (ev) => {
          if (ev.type === 'run' && ev.run.id === e.run_id) done();
        },
        ['run'],
      );
      const timer = setTimeout(done, 500);
      function done() {
        clearTimeout(timer);
        unsubscribe();
        r();
      }
    });
  }
}
