// The REST API as one table: each route declares its method, path, schemas and handler. The server
// validates requests with these schemas and the OpenAPI document is generated from the same table.

import { resolve } from 'node:path';
import { z } from 'zod';
import { holdSecrets, splitSecrets } from '../config/held-secrets';
import { VERSION } from '../config/version';
import type { DaemonContext } from '../context';
import {
  BackendStatus,
  CreatedRecording,
  CreatedRollout,
  CreateRecordingBody,
  CreateRolloutBody,
  CreateRunBody,
  EmptyBody,
  EventsQuery,
  EventsTicket,
  FailBody,
  GroupDetail,
  GroupQuery,
  Health,
  ModelVersionQuery,
  RecordingDetail,
  RewardBody,
  RolloutDetail,
  RolloutQuery,
  RunQuery,
} from '../protocol/api';
import { RunConfig, withoutSecrets } from '../protocol/config';
import {
  AttemptOutput,
  Group,
  Id,
  LlmCall,
  ModelVersion,
  NodeInfo,
  Page,
  Recording,
  Reward,
  Rollout,
  Run,
  RunMetrics,
  RunWorkers,
} from '../protocol/entities';
import { ApiError, notFound } from './errors';
import { evaluationRoutes } from './evaluations';
import { eventTickets, TICKET_TTL_MS } from './events';
import { evolutionRoutes } from './evolutions';
import { importRoutes } from './imports';
import { openApiFor } from './openapi';
import { type AnyRoute, route } from './route';
import { settleRunConfig } from './run-config';
import { validationRoutes } from './run-validation';
import { readTasks } from './tasks';

const IdParams = z.object({ id: Id }).strict();

/** A run as the API shows it (no node tokens). */
function publicRun<T extends { config: unknown }>(run: T): T {
  return { ...run, config: withoutSecrets(run.config) };
}

async function mustRun(ctx: DaemonContext, id: string) {
  const run = await ctx.store.getRun(id);
  if (!run) throw notFound('run', id);
  return run;
}

async function mustRollout(ctx: DaemonContext, id: string) {
  const rollout = await ctx.store.getRollout(id);
  if (!rollout) throw notFound('rollout', id);
  return rollout;
}

function baseUrls(ctx: DaemonContext, rolloutId: string) {
  const base = ctx.baseUrl();
  return { openai_base_url: `${base}/r/${rolloutId}/v1`, anthropic_base_url: `${base}/r/${rolloutId}` };
}

export const routes: AnyRoute[] = [
  route({
    method: 'GET',
    path: '/api/health',
    summary: 'liveness, version and store kind (no token needed)',
    auth: 'none',
    response: Health,
    handler: async ({ ctx }) => ({ ok: true as const, version: VERSION, store: ctx.store.kind }),
  }),
  route({
    method: 'GET',
    path: '/api/openapi.json',
    summary: 'this API as an OpenAPI 3.1 document',
    auth: 'token',
    response: z.record(z.string(), z.unknown()),
    handler: async ({ ctx }) => openApiFor(ctx, routes) as Record<string, unknown>,
  }),
  route({
    method: 'GET',
    path: '/api/events',
    summary:
      'WebSocket: every store event as one JSON DaemonEvent per message (token by header, or a ticket from POST /api/events/ticket as ?ticket=)',
    auth: 'token',
    websocket: true,
    query: EventsQuery,
    response: z.unknown(),
    handler: async () => {
      throw new ApiError(426, 'upgrade_required', 'GET /api/events is a WebSocket: send Upgrade: websocket');
    },
  }),

  route({
    method: 'POST',
    path: '/api/events/ticket',
    summary: `a single-use ticket that opens GET /api/events as ?ticket= within ${TICKET_TTL_MS / 1000} s, for browsers and webviews (which cannot send headers)`,
    auth: 'token',
    body: EmptyBody,
    response: EventsTicket,
    status: 201,
    handler: async ({ ctx }) => eventTickets(ctx).issue(),
  }),

  // rollouts
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

  // runs
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
          const message = err instanceof Error ? err.message : String(err);
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
  ...validationRoutes,
  ...evaluationRoutes,
  ...evolutionRoutes,
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

  // calls, model versions, nodes
  route({
    method: 'GET',
    path: '/api/llm-calls/:id',
    summary: 'one llm call with its bodies, token ids and logprobs',
    auth: 'token',
    params: IdParams,
    response: LlmCall,
    handler: async ({ ctx, params }) => {
      const call = await ctx.store.getLlmCall(params.id);
      if (!call) throw notFound('llm call', params.id);
      return call;
    },
  }),
  route({
    method: 'GET',
    path: '/api/model-versions',
    summary: 'model versions (of one run with ?run_id=)',
    auth: 'token',
    query: ModelVersionQuery,
    response: z.array(ModelVersion),
    handler: async ({ ctx, query }) => ctx.store.listModelVersions(query.run_id),
  }),
  route({
    method: 'GET',
    path: '/api/backends',
    summary: "the proxy's inference backends: which run each serves, version, load and health",
    auth: 'token',
    response: z.array(BackendStatus),
    handler: async ({ ctx }) => ctx.backends?.() ?? [],
  }),
  route({
    method: 'GET',
    path: '/api/nodes',
    summary: 'inference and trainer nodes with their health and versions',
    auth: 'token',
    response: z.array(NodeInfo),
    handler: async ({ ctx }) => ctx.store.listNodes(),
  }),

  // recordings
  route({
    method: 'POST',
    path: '/api/recordings',
    summary: 'start recording a session: get a scoped key and base URLs to point an agent at',
    auth: 'token',
    body: CreateRecordingBody,
    response: CreatedRecording,
    status: 201,
    handler: async ({ ctx, body }) => {
      const { value: upstream, held } = splitSecrets(body.upstream ?? { kind: 'reference' });
      const recording = await ctx.store.createRecording({
        name: body.name ?? `recording ${new Date().toISOString()}`,
        upstream,
        tito: body.tito,
        scoped: body.scoped,
      });
      holdSecrets(ctx.dataDir, `recording:${recording.id}`, held);
      // Recording keys work on the unscoped proxy paths: each records into its own recording.
      const base = ctx.baseUrl();
      return { ...recording, openai_base_url: `${base}/v1`, anthropic_base_url: base };
    },
  }),
  route({
    method: 'GET',
    path: '/api/recordings',
    summary: 'recordings',
    auth: 'token',
    response: z.array(Recording),
    handler: async ({ ctx }) => ctx.store.listRecordings(),
  }),
  route({
    method: 'GET',
    path: '/api/recordings/:id',
    summary: 'a recording with its calls and the tool runs its agent reported',
    auth: 'token',
    params: IdParams,
    response: RecordingDetail,
    handler: async ({ ctx, params }) => {
      const recording = await ctx.store.getRecording(params.id);
      if (!recording) throw notFound('recording', params.id);
      const [calls, tool_runs] = await Promise.all([
        ctx.store.listRecordingCalls(recording.id),
        ctx.store.listToolRuns(recording.rollout_id),
      ]);
      return { ...recording, calls, tool_runs };
    },
  }),
  route({
    method: 'POST',
    path: '/api/recordings/:id/stop',
    summary: 'stop a recording',
    auth: 'token',
    params: IdParams,
    body: EmptyBody,
    response: Recording,
    handler: async ({ ctx, params }) => {
      const recording = await ctx.store.getRecording(params.id);
      if (!recording) throw notFound('recording', params.id);
      return ctx.store.stopRecording(params.id);
    },
  }),
  ...importRoutes,
];
