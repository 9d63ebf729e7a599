// The routes of runs: create one from a config (its tasks read and stored), list, show, stop, and
// what a run holds: its workers, metrics, groups (and a group's rollouts), its attempts' output.
// Part of the route table in routes.ts.
import { resolve } from 'node:path';
import { z } from 'zod';
import { holdSecrets, splitSecrets } from '../config/held-secrets';
import type { DaemonContext } from '../context';
import { errorText } from '../error-text';
import { CreateRunBody, EmptyBody, GroupDetail, GroupQuery, IdParams, RunQuery } from '../protocol/api';
import { withoutSecrets } from '../protocol/config';
import { AttemptOutput, Group, Page, Run, RunMetrics, RunWorkers } from '../protocol/entities';
import { ApiError, notFound } from './errors';
import { type AnyRoute, route } from './route';
import { settleRunConfig } from './run-config';
import { readTasks } from './tasks';

/** A run as the API shows it (no node tokens). */
function publicRun<T extends { config: unknown }>(run: T): T {
  return { ...run, config: withoutSecrets(run.config) };
}

async function mustRun(ctx: DaemonContext, id: string) {
  const run = await ctx.store.getRun(id);
  if (!run) throw notFound('run', id);
  return run;
}

export const runRoutes: AnyRoute[] = [
  route({
    method: 'GET',
    path: '/api/runs',
    summary: 'runs, newest first, paged by cursor',
    auth: 'token',
    query: RunQuery,
    response: Page(Run),
    handler: async ({ ctx, query }) => {
      const page = await ctx.store.listRuns(query);
      return { ...page, items: page.items.map(publicRun) };
    },
  }),
  route({
    method: 'POST',
    path: '/api/runs',
    summary: 'create a run from a config: read and split its tasks, store them, start the run',
    auth: 'token',
    body: CreateRunBody,
    response: Run,
    status: 201,
    handler: async ({ ctx, body }) => {
      // Everything that can reject the request is checked before anything is written.
      const tasks = await readTasks(body.config, body.base_dir);
      // The store gets the config without its credentials; this daemon holds them to start the run.
      const { value: config, held } = splitSecrets(await settleRunConfig(ctx, body.config));
      const run = await ctx.store.createRun({
        name: body.config.name,
        config,
        ...(body.base_dir === undefined ? {} : { base_dir: resolve(body.base_dir) }),
      });
      holdSecrets(ctx.dataDir, `run:${run.id}`, held);
      await ctx.store.createTasks(run.id, tasks);
      if (ctx.runs) {
        try {
          await ctx.runs.start(run.id);
        } catch (err) {
          const message = errorText(err);
          ctx.log('run failed to start', { run_id: run.id, error: message });
          return publicRun(await ctx.store.updateRun(run.id, { status: 'failed', error: message }));
        }
      }
      return publicRun((await ctx.store.getRun(run.id)) ?? run);
    },
  }),
  route({
    method: 'GET',
    path: '/api/runs/:id',
    summary: 'one run',
    auth: 'token',
    params: IdParams,
    response: Run,
    handler: async ({ ctx, params }) => publicRun(await mustRun(ctx, params.id)),
  }),
  route({
    method: 'POST',
    path: '/api/runs/:id/stop',
    summary: 'stop the run (its state stays in the store)',
    auth: 'token',
    params: IdParams,
    body: EmptyBody,
    response: Run,
    handler: async ({ ctx, params }) => {
      const run = await mustRun(ctx, params.id);
      if (run.status === 'finished' || run.status === 'failed') {
        throw new ApiError(409, 'conflict', `run ${run.id} is already ${run.status}`, 'id');
      }
      if (run.status === 'stopped') return publicRun(run);
      if (ctx.runs) await ctx.runs.stop(run.id);
      const after = await mustRun(ctx, run.id);
      if (after.status === 'stopped' || after.status === 'finished' || after.status === 'failed')
        return publicRun(after);
      return publicRun(await ctx.store.updateRun(run.id, { status: 'stopped' }));
    },
  }),
  route({
    method: 'GET',
    path: '/api/runs/:id/workers',
    summary:
      "who runs the run's rollouts: the workers seen lately (the daemon's own among them), and the command that attaches one",
    auth: 'token',
    params: IdParams,
    response: RunWorkers,
    handler: async ({ ctx, params }) => {
      const workers = await ctx.runs?.runWorkers(params.id);
      if (!workers) throw notFound('run', params.id);
      return workers;
    },
  }),
  route({
    method: 'GET',
    path: '/api/attempts/:id/output',
    summary: "the tail of an attempt's stdout and stderr (attempts the daemon's own workers ran)",
    auth: 'token',
    params: IdParams,
    response: AttemptOutput,
    handler: async ({ ctx, params }) => {
      const output = ctx.runs?.attemptOutput(params.id);
      if (!output) throw notFound('attempt output', params.id);
      return output;
    },
  }),
  route({
    method: 'GET',
    path: '/api/runs/:id/metrics',
    summary: "the run's metrics per step",
    auth: 'token',
    params: IdParams,
    response: z.array(RunMetrics),
    handler: async ({ ctx, params }) => {
      await mustRun(ctx, params.id);
      return ctx.store.listRunMetrics(params.id);
    },
  }),
  route({
    method: 'GET',
    path: '/api/runs/:id/groups',
    summary: "the run's groups, paged by cursor",
    auth: 'token',
    params: IdParams,
    query: GroupQuery,
    response: Page(Group),
    handler: async ({ ctx, params, query }) => {
      await mustRun(ctx, params.id);
      return ctx.store.listGroups(params.id, query);
    },
  }),
  route({
    method: 'GET',
    path: '/api/groups/:id',
    summary: 'a group with its rollouts',
    auth: 'token',
    params: IdParams,
    response: GroupDetail,
    handler: async ({ ctx, params }) => {
      const group = await ctx.store.getGroup(params.id);
      if (!group) throw notFound('group', params.id);
      const rollouts = [];
      let cursor: string | undefined;
      do {
        const page = await ctx.store.listRollouts({ group_id: group.id, cursor, limit: 1000 });
        rollouts.push(...page.items);
        cursor = page.next_cursor ?? undefined;
      } while (cursor);
      return { ...group, rollouts };
    },
  }),
];
