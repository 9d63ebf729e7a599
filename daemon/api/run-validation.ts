// The routes of a run's train/inference validation: a step's agreement with its scatter, and resuming a
// run that a threshold (or a person) paused. Part of the route table in routes.ts.
import { z } from 'zod';
import { EmptyBody, IdParams } from '../protocol/api';
import { withoutSecrets } from '../protocol/config';
import { Id, Run } from '../protocol/entities';
import { StepValidation } from '../protocol/training';
import { ApiError, notFound } from './errors';
import { type AnyRoute, route } from './route';

const StepParams = z.object({ id: Id, step: z.coerce.number().int().nonnegative() }).strict();
/** A run in these states can go on from its stored step. */
const RESUMABLE = new Set(['paused', 'stopped']);

export const validationRoutes: AnyRoute[] = [
  route({
    method: 'GET',
    path: '/api/runs/:id/steps/:step/validation',
    summary:
      "a step's train/inference agreement: the figures over tokens with a rollout logprob and up to 512 (rollout prob, trainer prob) pairs",
    auth: 'token',
    params: StepParams,
    response: StepValidation,
    handler: async ({ ctx, params }) => {
      if (!(await ctx.store.getRun(params.id))) throw notFound('run', params.id);
      const found = await ctx.store.getStepValidation(params.id, params.step);
      if (!found)
        throw new ApiError(
          404,
          'not_found',
          `step ${params.step} of run ${params.id} has no train/inference validation (not trained yet, no rollout logprobs, or a trainer that does not report it)`,
          'step',
        );
      return found;
    },
  }),
  route({
    method: 'POST',
    path: '/api/runs/:id/resume',
    summary: 'go on with a paused or stopped run from its stored step',
    auth: 'token',
    params: IdParams,
    body: EmptyBody,
    response: Run,
    handler: async ({ ctx, params }) => {
      const run = await ctx.store.getRun(params.id);
      if (!run) throw notFound('run', params.id);
      if (!RESUMABLE.has(run.status))
        throw new ApiError(
          409,
          'conflict',
          `run ${run.id} is ${run.status}: only a paused or stopped run resumes`,
          'id',
        );
      if (!ctx.runs) throw new ApiError(409, 'conflict', 'this daemon runs no scheduler', 'id');
      try {
        await ctx.runs.start(run.id);
      } catch (err) {
        throw new ApiError(409, 'conflict', `run ${run.id} cannot resume: ${(err as Error).message}`, 'id');
      }
      const after = (await ctx.store.getRun(run.id)) ?? run;
      return { ...after, config: withoutSecrets(after.config) };
    },
  }),
];
