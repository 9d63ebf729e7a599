// The routes of evaluations: create one from a config (a run that never trains carries its tasks and
// rollouts), list, show, stop, and compare two. Part of the route table in routes.ts.
import { resolve } from 'node:path';
import { z } from 'zod';
import { holdSecrets, splitSecrets } from '../config/held-secrets';
import { compareEvaluations } from '../eval/compare';
import { EmptyBody } from '../protocol/api';
import { Id, Page } from '../protocol/entities';
import {
  CompareQuery,
  Comparison,
  CreateEvaluationBody,
  Evaluation,
  EvaluationQuery,
} from '../protocol/evaluation';
import type { StoredEvaluation } from '../store/store';
import { ApiError, notFound } from './errors';
import { type AnyRoute, route } from './route';
import { readTasks } from './tasks';

const IdParams = z.object({ id: Id }).strict();

const shown = ({ spec: _spec, ...e }: StoredEvaluation): Evaluation => e;

export const evaluationRoutes: AnyRoute[] = [
  route({
    method: 'POST',
    path: '/api/evaluations',
    summary:
      'evaluate a harness: run a split of the config’s tasks `attempts` times each at the backends’ current model version, no training',
    auth: 'token',
    body: CreateEvaluationBody,
    response: Evaluation,
    status: 201,
    handler: async ({ ctx, body }) => {
      const tasks = await readTasks(body.config, body.base_dir);
      if (!tasks.some((t) => t.split === body.split))
        throw new ApiError(400, 'invalid_tasks', `the config's tasks have no ${body.split} split`, 'split');
      const baseDir = body.base_dir === undefined ? undefined : resolve(body.base_dir);
      const harnessDir =
        body.harness_dir !== undefined ? resolve(baseDir ?? '.', body.harness_dir) : undefined;
      const config = {
        ...body.config,
        harness: { ...body.config.harness, ...(harnessDir ? { dir: harnessDir } : {}) },
      };
      const name = body.name ?? `eval ${body.config.name} ${body.split}`;
      const { value: stored, held } = splitSecrets(config);
      const run = await ctx.store.createRun({
        name,
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
          const message = err instanceof Error ? err.message : String(err);
          await ctx.store.updateRun(run.id, { status: 'failed', error: message });
          return shown(await ctx.store.updateEvaluation(evaluation.id, { status: 'failed', error: message }));
        }
      }
      return shown(evaluation);
    },
  }),
  route({
    method: 'GET',
    path: '/api/evaluations',
    summary: 'evaluations, newest first (paged)',
    auth: 'token',
    query: EvaluationQuery,
    response: Page(Evaluation),
    handler: async ({ ctx, query }) => {
      const page = await ctx.store.listEvaluations(query);
      return { ...page, items: page.items.map(shown) };
    },
  }),
  route({
    method: 'GET',
    path: '/api/evaluations/compare',
    summary:
      'compare two evaluations task by task: paired differences, bootstrap interval, sign test, tokens',
    auth: 'token',
    query: CompareQuery,
    response: Comparison,
    handler: async ({ ctx, query }) => {
      const pair = [];
      for (const field of ['a', 'b'] as const) {
        const e = await ctx.store.getEvaluation(query[field]);
        if (!e) throw notFound('evaluation', query[field], field);
        if (e.status !== 'finished')
          throw new ApiError(409, 'conflict', `evaluation ${e.id} is ${e.status}, not finished`, field);
        pair.push(e);
      }
      return compareEvaluations(pair[0]!, pair[1]!, query.seed);
    },
  }),
  route({
    method: 'GET',
    path: '/api/evaluations/:id',
    summary: 'an evaluation: per-task results and the split’s figures once finished',
    auth: 'token',
    params: IdParams,
    response: Evaluation,
    handler: async ({ ctx, params }) => {
      const e = await ctx.store.getEvaluation(params.id);
      if (!e) throw notFound('evaluation', params.id);
      return shown(e);
    },
  }),
  route({
    method: 'POST',
    path: '/api/evaluations/:id/stop',
    summary: 'stop an evaluation (its open attempts are cancelled)',
    auth: 'token',
    params: IdParams,
    body: EmptyBody,
    response: Evaluation,
    handler: async ({ ctx, params }) => {
      const e = await ctx.store.getEvaluation(params.id);
      if (!e) throw notFound('evaluation', params.id);
      if (e.status === 'running') {
        await ctx.runs?.stop(e.run_id);
        const after = await ctx.store.getEvaluation(e.id);
        if (after?.status === 'running')
          return shown(
            await ctx.store.updateEvaluation(e.id, {
              status: 'stopped',
              finished_at: new Date().toISOString(),
            }),
          );
        return shown(after ?? e);
      }
      return shown(e);
    },
  }),
];
