// The routes of rollouts: create one (standalone or of a run), list, show with everything recorded,
// reward, complete, fail, cancel. Part of the route table in routes.ts.

import type { DaemonContext } from '../context';
import {
  CreatedRollout,
  CreateRolloutBody,
  EmptyBody,
  FailBody,
  IdParams,
  RewardBody,
  RolloutDetail,
  RolloutQuery,
} from '../protocol/api';
import { RunConfig } from '../protocol/config';
import { Page, Reward, Rollout } from '../protocol/entities';
import { ApiError, notFound } from './errors';
import { type AnyRoute, route } from './route';

async function mustRollout(ctx: DaemonContext, id: string) {
  const rollout = await ctx.store.getRollout(id);
  if (!rollout) throw notFound('rollout', id);
  return rollout;
}

function baseUrls(ctx: DaemonContext, rolloutId: string) {
  const base = ctx.baseUrl();
  return { openai_base_url: `${base}/r/${rolloutId}/v1`, anthropic_base_url: `${base}/r/${rolloutId}` };
}

export const rolloutRoutes: AnyRoute[] = [
  route({
    method: 'POST',
    path: '/api/rollouts',
    summary:
      'create a rollout (standalone ones start their attempt at once) and get its scoped key and base URLs',
    auth: 'token',
    body: CreateRolloutBody,
    response: CreatedRollout,
    status: 201,
    handler: async ({ ctx, body }) => {
      if (body.run_id && !(await ctx.store.getRun(body.run_id))) throw notFound('run', body.run_id, 'run_id');
      const created = await ctx.store.createRollout({
        kind: body.run_id ? 'run' : 'standalone',
        run_id: body.run_id ?? null,
        input: body.input ?? null,
        max_attempts: body.max_attempts,
        tito: body.tito,
      });
      if (!body.run_id) await ctx.store.startAttempt(created.id, 'api');
      return { id: created.id, key: created.key, ...baseUrls(ctx, created.id) };
    },
  }),
  route({
    method: 'GET',
    path: '/api/rollouts',
    summary: 'rollouts, newest first, paged by cursor and filtered',
    auth: 'token',
    query: RolloutQuery,
    response: Page(Rollout),
    handler: async ({ ctx, query }) => {
      const { has_reward, ...rest } = query;
      return ctx.store.listRollouts({
        ...rest,
        ...(has_reward === undefined ? {} : { has_reward: has_reward === 'true' }),
      });
    },
  }),
  route({
    method: 'GET',
    path: '/api/rollouts/:id',
    summary:
      'a rollout with its attempts, rewards, llm calls (token ids, logprobs), prefix breaks and the tool runs its harness reported',
    auth: 'rollout',
    params: IdParams,
    response: RolloutDetail,
    handler: async ({ ctx, params }) => {
      const rollout = await mustRollout(ctx, params.id);
      const [attempts, rewards, llm_calls, prefix_breaks, tool_runs] = await Promise.all([
        ctx.store.listAttempts(params.id),
        ctx.store.listRewards(params.id),
        ctx.store.listLlmCalls(params.id),
        ctx.store.getPrefixBreaks(params.id),
        ctx.store.listToolRuns(params.id),
      ]);
      return { ...rollout, attempts, rewards, llm_calls, prefix_breaks, tool_runs };
    },
  }),
  route({
    method: 'POST',
    path: '/api/rollouts/:id/reward',
    summary: 'give the rollout a reward (the latest one counts)',
    auth: 'rollout',
    params: IdParams,
    body: RewardBody,
    response: Reward,
    status: 201,
    handler: async ({ ctx, params, body, caller }) => {
      await mustRollout(ctx, params.id);
      // The harness holds the rollout key: what it posts is the harness's reward, whatever it says.
      if (caller.kind === 'rollout' && body.source !== undefined && body.source !== 'harness')
        throw new ApiError(
          403,
          'forbidden',
          `a rollout key posts rewards as source "harness" (got "${body.source}")`,
          'source',
        );
      return ctx.store.addReward(params.id, {
        value: body.value,
        source: body.source ?? (caller.kind === 'rollout' ? 'harness' : 'api'),
        detail: body.detail,
      });
    },
  }),
  route({
    method: 'POST',
    path: '/api/rollouts/:id/complete',
    summary: 'the harness finished the rollout',
    auth: 'rollout',
    params: IdParams,
    body: EmptyBody,
    response: Rollout,
    handler: async ({ ctx, params, caller }) => {
      const rollout = await mustRollout(ctx, params.id);
      // In a verifier-rewarded run the worker completes the rollout once the verifier has spoken;
      // a harness completing it itself would skip the verifier.
      if (caller.kind === 'rollout' && rollout.run_id) {
        const run = await ctx.store.getRun(rollout.run_id);
        const config = run ? RunConfig.safeParse(run.config) : null;
        if (config?.success && config.data.harness.reward === 'verifier')
          throw new ApiError(
            409,
            'verifier_run',
            "this run's reward comes from its verifier: the worker completes the rollout after it",
          );
      }
      return ctx.store.completeRollout(params.id);
    },
  }),
  route({
    method: 'POST',
    path: '/api/rollouts/:id/fail',
    summary: 'the harness failed the rollout (retried while attempts remain)',
    auth: 'rollout',
    params: IdParams,
    body: FailBody,
    response: Rollout,
    handler: async ({ ctx, params, body }) => {
      await mustRollout(ctx, params.id);
      return ctx.store.failRollout(params.id, body.error);
    },
  }),
  route({
    method: 'POST',
    path: '/api/rollouts/:id/cancel',
    summary: 'cancel the rollout',
    auth: 'token',
    params: IdParams,
    body: EmptyBody,
    response: Rollout,
    handler: async ({ ctx, params }) => {
      await mustRollout(ctx, params.id);
      return ctx.store.cancelRollout(params.id);
    },
  }),
];
