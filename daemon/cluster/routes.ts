// The worker routes: claim a rollout of a run, heartbeat an attempt, finish it (with a reward).
// Auth: the daemon token as `Authorization: Bearer <token>`.
import { timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { z } from 'zod';
import type { DaemonContext } from '../context';
import { RunConfig } from '../protocol/config';
import type { Attempt, Rollout } from '../protocol/entities';
import { StoreError } from '../store/store';
import { ClaimBody, type Claimed, FinishBody, HeartbeatBody, type HeartbeatReply } from './wire';

export interface RouteOptions {
  /** Seconds between worker heartbeats (told to the worker with each claim). */
  heartbeatSeconds: number;
}

const TERMINAL_RUN = new Set(['finished', 'stopped', 'failed']);

function sendError(reply: FastifyReply, status: number, code: string, message: string, field: string | null) {
  return reply.code(status).send({ error: { message, field, code } });
}

function tokenMatches(header: string | undefined, token: string): boolean {
  const given = header?.startsWith('Bearer ') ? header.slice(7) : '';
  const a = Buffer.from(given);
  const b = Buffer.from(token);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** Parse a body with a zod schema; on failure answer 400 naming the first bad field. */
function parse<S extends z.ZodType>(schema: S, body: unknown, reply: FastifyReply): z.infer<S> | undefined {
  const result = schema.safeParse(body ?? {});
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  const field = issue && issue.path.length > 0 ? issue.path.join('.') : null;
  sendError(reply, 400, 'invalid', `invalid body: ${issue?.message ?? 'bad input'}`, field);
  return undefined;
}

function storeFailure(reply: FastifyReply, err: unknown) {
  if (err instanceof StoreError) {
    const status = err.code === 'not_found' ? 404 : err.code === 'conflict' ? 409 : 400;
    return sendError(reply, status, err.code, err.message, err.field);
  }
  throw err;
}

export function registerWorkerRoutes(app: FastifyInstance, ctx: DaemonContext, options: RouteOptions): void {
  const { store } = ctx;
  /** attempt id → rollout id for the claims this daemon issued (a finish may also name its rollout). */
  const attemptRollout = new Map<string, string>();

  const auth = async (request: FastifyRequest, reply: FastifyReply) => {
    if (!tokenMatches(request.headers.authorization, ctx.token)) {
      return sendError(
        reply,
        401,
        'unauthorized',
        'missing or wrong daemon token (Authorization: Bearer …)',
        null,
      );
    }
  };

  /** Wait until a rollout of the run changes (or `ms` passes). */
  const nextRolloutEvent = (runId: string, ms: number) =>
    new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        unsubscribe();
        resolve();
      };
      const timer = setTimeout(done, ms);
      const unsubscribe = store.subscribe((event) => {
        if ((event.type === 'rollout' && event.rollout.run_id === runId) || event.type === 'run') done();
      });
    });

  const findAttempt = async (
    attemptId: string,
    rolloutId: string | undefined,
  ): Promise<{ rollout: Rollout; attempt: Attempt } | null> => {
    const id = rolloutId ?? attemptRollout.get(attemptId);
    if (!id) return null;
    const rollout = await store.getRollout(id);
    if (!rollout) return null;
    const attempt = (await store.listAttempts(id)).find((a) => a.id === attemptId);
    return attempt ? { rollout, attempt } : null;
  };

  app.post<{ Params: { id: string } }>(
    '/api/runs/:id/claim',
    { preHandler: auth },
    async (request, reply) => {
      const body = parse(ClaimBody, request.body, reply);
      if (!body) return reply;
      const runId = request.params.id;
      const deadline = Date.now() + body.wait_ms;
      for (;;) {
        const run = await store.getRun(runId);
        if (!run) return sendError(reply, 404, 'not_found', `no run ${runId}`, 'id');
        if (TERMINAL_RUN.has(run.status)) {
          return sendError(reply, 410, 'gone', `run ${runId} is ${run.status}`, null);
        }
        if (request.raw.destroyed) return reply;
        const claimed =
          run.status === 'running' ? await store.claimRollout({ run_id: runId, worker: body.worker }) : null;
        if (claimed) {
          const { rollout, attempt } = claimed;
          attemptRollout.set(attempt.id, rollout.id);
          const config = RunConfig.parse(run.config);
          const key = await store.getRolloutKey(rollout.id);
          const base = ctx.baseUrl();
          const answer: Claimed = {
            rollout,
            attempt,
            key: key ?? '',
            openai_base_url: `${base}/r/${rollout.id}/v1`,
            anthropic_base_url: `${base}/r/${rollout.id}`,
            input: rollout.input,
            model: config.model.name,
            timeout_s: config.harness.timeout_s,
            heartbeat_s: options.heartbeatSeconds,
          };
          return answer;
        }
        const left = deadline - Date.now();
        if (left <= 0) return reply.code(204).send();
        await nextRolloutEvent(runId, Math.min(left, 1000));
      }
    },
  );

  app.post<{ Params: { id: string } }>(
    '/api/attempts/:id/heartbeat',
    { preHandler: auth },
    async (request, reply) => {
      const body = parse(HeartbeatBody, request.body, reply);
      if (!body) return reply;
      const found = await findAttempt(request.params.id, body.rollout_id);
      if (!found) return sendError(reply, 404, 'not_found', `no attempt ${request.params.id}`, 'id');
      if (found.attempt.status === 'running') {
        try {
          await store.heartbeat(found.attempt.id);
        } catch (err) {
          if (!(err instanceof StoreError)) throw err;
        }
      }
      const after = (await findAttempt(found.attempt.id, found.rollout.id))?.attempt ?? found.attempt;
      const answer: HeartbeatReply = { status: after.status, cancel: after.status !== 'running' };
      return answer;
    },
  );

  app.post<{ Params: { id: string } }>(
    '/api/attempts/:id/finish',
    { preHandler: auth },
    async (request, reply) => {
      const body = parse(FinishBody, request.body, reply);
      if (!body) return reply;
      const found = await findAttempt(request.params.id, body.rollout_id);
      if (!found) return sendError(reply, 404, 'not_found', `no attempt ${request.params.id}`, 'id');
      const { rollout, attempt } = found;
      if (attempt.status !== 'running') {
        return sendError(reply, 409, 'conflict', `attempt ${attempt.id} is already ${attempt.status}`, null);
      }
      try {
        if (body.reward !== undefined && body.status === 'succeeded' && rollout.reward === null) {
          await store.addReward(rollout.id, { value: body.reward, source: 'harness' });
        }
        const after = await store.finishAttempt(attempt.id, body.status, body.error);
        attemptRollout.delete(attempt.id);
        return { rollout: after };
      } catch (err) {
        return storeFailure(reply, err);
      }
    },
  );
}
