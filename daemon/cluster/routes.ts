// The worker routes: claim a rollout of a run, heartbeat an attempt, finish it (with a reward).
// Auth: the daemon token as `Authorization: Bearer <token>`, or the run's worker credential (a remote
// worker's: only the claims of its run and that run's attempts).
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { z } from 'zod';
import { authorize, bearerToken, WORKER_KEY_PREFIX, workerKeyRun } from '../api/auth';
import { keepConnectionFor413 } from '../api/body';
import { ApiError, errorBody, toApiError, validationError } from '../api/errors';
import { BoundedMap } from '../bounded-map';
import { restoreSecrets } from '../config/held-secrets';
import type { DaemonContext } from '../context';
import { RunConfig } from '../protocol/config';
import { type Attempt, Id, type Rollout } from '../protocol/entities';
import { harnessFailure } from '../protocol/failures';
import {
  ClaimBody,
  type Claimed,
  FinishBody,
  HeartbeatBody,
  type HeartbeatReply,
  OutputBody,
} from '../protocol/worker';
import type { Workers } from '../worker/workers';
import { nextEvent, rolloutOf } from './events';

export interface RouteOptions {
  /** Seconds between worker heartbeats (told to the worker with each claim). */
  heartbeatSeconds: number;
  /** Told of every claim and heartbeat (who is attached to which run). */
  workers?: Pick<Workers, 'saw' | 'appendOutput' | 'closeOutput'>;
}

const TERMINAL_RUN = new Set(['finished', 'stopped', 'failed']);

/** Parse a body with a zod schema; a 400 naming the first bad field otherwise. */
function parse<S extends z.ZodType>(schema: S, body: unknown): z.infer<S> {
  const result = schema.safeParse(body ?? {});
  if (!result.success) throw validationError(result.error, 'body');
  return result.data;
}

const CLAIMS_BUDGET_BYTES = 2 * 1024 * 1024;
const CLAIM_BYTES = 160;

export async function registerWorkerRoutes(
  app: FastifyInstance,
  ctx: DaemonContext,
  options: RouteOptions,
): Promise<void> {
  const { store } = ctx;
  /**
   * attempt id → rollout id for the claims this daemon issued (a finish may also name its rollout):
   * CLAIM_BYTES a claim, CLAIMS_BUDGET_BYTES in all; an entry goes when its attempt is finished here,
   * else (an attempt timed out or cancelled elsewhere) the claim issued longest ago goes past the
   * budget: a worker that names its rollout (the SDK's does) never needs it.
   */
  const attemptRollout = new BoundedMap<string, string>(CLAIMS_BUDGET_BYTES);

  const findAttempt = async (
    attemptId: string,
    rolloutId: string | undefined,
  ): Promise<{ rollout: Rollout; attempt: Attempt }> => {
    const id = rolloutId ?? attemptRollout.get(attemptId);
    const rollout = id ? await store.getRollout(id) : null;
    const attempt = rollout
      ? (await store.listAttempts(rollout.id)).find((a) => a.id === attemptId)
      : undefined;
    if (!rollout || !attempt) {
      throw new ApiError(404, 'not_found', `no attempt ${attemptId}${id ? ` of rollout ${id}` : ''}`, 'id');
    }
    return { rollout, attempt };
  };

  /** Does the rollout's run take its rewards from harness.verifier? */
  const rewardsByVerifier = async (rollout: Rollout): Promise<boolean> => {
    const run = rollout.run_id ? await store.getRun(rollout.run_id) : null;
    const config = run ? RunConfig.safeParse(run.config) : null;
    return config?.success === true && config.data.harness.reward === 'verifier';
  };

  // Its own scope: the API's error shape and token check, without touching the proxy's routes.
  await app.register(async (scope) => {
    scope.setErrorHandler(async (err, request, reply) => {
      const e = toApiError(err, ctx.config.body_limit_bytes);
      if (e.status >= 500) ctx.log('worker route error', { error: e.message });
      await keepConnectionFor413(e, request.raw, reply);
      return reply.code(e.status).send(errorBody(e));
    });
    /** request → the run its worker credential works for (absent: the daemon token). */
    const workerRun = new WeakMap<FastifyRequest, string>();
    scope.addHook('onRequest', async (request) => {
      const token = bearerToken(request.headers);
      if (token?.startsWith(WORKER_KEY_PREFIX)) workerRun.set(request, await workerKeyRun(ctx, token));
      else await authorize(ctx, 'token', token, undefined);
      const id = Id.safeParse((request.params as { id?: unknown }).id);
      if (!id.success) throw validationError(id.error, 'path', ['id']);
    });
    /** A worker credential acts on its own run only. */
    const ownRun = (request: FastifyRequest, runId: string | null) => {
      const own = workerRun.get(request);
      if (own !== undefined && own !== runId)
        throw new ApiError(
          403,
          'forbidden',
          `this worker credential is for run ${own}, not ${runId === null ? 'a rollout outside runs' : `run ${runId}`}`,
          'authorization',
        );
    };

    scope.post<{ Params: { id: string } }>('/api/runs/:id/claim', async (request, reply) => {
      const body = parse(ClaimBody, request.body);
      const runId = request.params.id;
      ownRun(request, runId);
      const deadline = Date.now() + body.wait_ms;
      for (;;) {
        const run = await store.getRun(runId);
        if (!run) throw new ApiError(404, 'not_found', `no run ${runId}`, 'id');
        if (TERMINAL_RUN.has(run.status))
          throw new ApiError(410, 'gone', `run ${runId} is ${run.status}`, 'id');
        // The worker hung up while waiting: take nothing for it.
        if (request.socket.destroyed) return reply;
        options.workers?.saw(runId, body.worker ?? 'unnamed worker');
        const claimed =
          run.status === 'running' ? await store.claimRollout({ run_id: runId, worker: body.worker }) : null;
        if (claimed) {
          const { rollout, attempt } = claimed;
          attemptRollout.set(attempt.id, rollout.id, CLAIM_BYTES);
          // The worker runs the verifier: it gets the argv with the credentials this daemon holds.
          const config = RunConfig.parse(restoreSecrets(ctx.dataDir, `run:${runId}`, run.config));
          const base = ctx.baseUrl();
          const answer: Claimed = {
            rollout,
            attempt,
            key: (await store.issueRolloutKey(rollout.id)) ?? '',
            openai_base_url: `${base}/r/${rollout.id}/v1`,
            anthropic_base_url: `${base}/r/${rollout.id}`,
            input: rollout.input,
            model: config.model.name,
            timeout_s: config.harness.timeout_s,
            heartbeat_s: options.heartbeatSeconds,
            reward: config.harness.reward,
            ...(config.harness.reward === 'verifier' ? { verifier: config.harness.verifier } : {}),
            ...(config.harness.command ? { command: config.harness.command } : {}),
            sandbox: config.harness.sandbox,
          };
          return answer;
        }
        const left = deadline - Date.now();
        if (left <= 0) return reply.code(204).send();
        // Woken by a rollout of the run (queued or requeued) or a run status change.
        const wake = rolloutOf(runId);
        await nextEvent(store, (e) => wake(e) || e.type === 'run', Math.min(left, 1000));
      }
    });

    scope.post<{ Params: { id: string } }>('/api/attempts/:id/heartbeat', async (request) => {
      const body = parse(HeartbeatBody, request.body);
      const found = await findAttempt(request.params.id, body.rollout_id);
      ownRun(request, found.rollout.run_id);
      let status = found.attempt.status;
      if (found.rollout.run_id)
        options.workers?.saw(found.rollout.run_id, found.attempt.worker ?? 'unnamed worker');
      if (status === 'running') {
        await store.heartbeat(found.attempt.id);
        status = (await findAttempt(found.attempt.id, found.rollout.id)).attempt.status;
      }
      const answer: HeartbeatReply = { status, cancel: status !== 'running' };
      return answer;
    });

    // A remote worker's harness output, streamed as it comes (kept like the daemon workers' tail).
    scope.post<{ Params: { id: string } }>('/api/attempts/:id/output', async (request) => {
      const body = parse(OutputBody, request.body);
      const { rollout: own, attempt } = await findAttempt(request.params.id, body.rollout_id);
      ownRun(request, own.run_id);
      if (attempt.status !== 'running')
        throw new ApiError(409, 'conflict', `attempt ${attempt.id} is already ${attempt.status}`, 'id');
      options.workers?.appendOutput(attempt.id, body.chunk);
      return { ok: true };
    });

    scope.post<{ Params: { id: string } }>('/api/attempts/:id/finish', async (request) => {
      const body = parse(FinishBody, request.body);
      const { rollout, attempt } = await findAttempt(request.params.id, body.rollout_id);
      ownRun(request, rollout.run_id);
      if (attempt.status !== 'running') {
        throw new ApiError(409, 'conflict', `attempt ${attempt.id} is already ${attempt.status}`, 'id');
      }
      let { status, error } = body;
      if (status === 'succeeded' && body.reward !== undefined && body.reward_source === 'verifier') {
        // The verifier's reward always counts (the latest reward is the rollout's), also over one
        // the harness posted itself.
        await store.addReward(rollout.id, {
          value: body.reward,
          source: 'verifier',
          ...(body.reward_detail === undefined ? {} : { detail: body.reward_detail }),
        });
      } else if (status === 'succeeded' && (await rewardsByVerifier(rollout))) {
        // Never let a harness reward (or none) stand in for the verifier's.
        status = 'failed';
        error =
          'the run takes its reward from harness.verifier, but the worker finished without a verifier reward ' +
          '(use `harness-rl worker`, the Ray workers of workers/python, or runWorker from daemon/worker/worker, which run it)';
      } else if (status === 'succeeded' && body.reward !== undefined && rollout.reward === null) {
        // The harness may have posted its reward itself (POST /api/rollouts/:id/reward); that one counts.
        await store.addReward(rollout.id, { value: body.reward, source: 'harness' });
      }
      const after = await store.finishAttempt(
        attempt.id,
        status,
        error,
        status === body.status ? body.failure : harnessFailure('verifier'),
      );
      attemptRollout.delete(attempt.id);
      options.workers?.closeOutput(attempt.id);
      return { rollout: after };
    });
  });
}
