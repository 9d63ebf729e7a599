// The routes of evaluations: create one from a config (a run that never trains carries its tasks and
// rollouts), list, show, stop, and compare two. Part of the route table in routes.ts.
import { compareEvaluations } from '../eval/compare';
import { startEvaluation } from '../eval/start';
import { EmptyBody, IdParams } from '../protocol/api';
import { Page } from '../protocol/entities';
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

const shown = ({ spec: _spec, ...e }: StoredEvaluation): Evaluation => e;

/** An evolved candidate and another harness folder at once: a 400, rather than one of them ignored. */
export function oneHarness(body: {
  harness_dir?: string;
  config: { harness: { candidate?: string } };
}): void {
  if (body.harness_dir !== undefined && body.config.harness.candidate)
    throw new ApiError(
      400,
      'invalid_request',
      'harness_dir and config.harness.candidate name two harnesses: give one',
      'harness_dir',
    );
}

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
      oneHarness(body);
      return shown(await startEvaluation(ctx, body));
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
