// The worker routes: claim a rollout of a run (a long poll), heartbeat an attempt, stream its output,
// finish it (with a reward). Part of the route table in routes.ts; the bodies live in protocol/worker.ts.
// Auth: the daemon token, or the run's worker credential (a remote worker's: only the claims of its run
// and that run's attempts).
import type { z } from 'zod';
import { BoundedMap } from '../bounded-map';
import { restoreSecrets } from '../config/held-secrets';
import type { DaemonContext, RunController } from '../context';
import { IdParams } from '../protocol/api';
import { RunConfig } from '../protocol/config';
import type { Attempt, Rollout } from '../protocol/entities';
import { harnessFailure, infrastructure } from '../protocol/failures';
import {
  ClaimBody,
  Claimed,
  FinishBody,
  FinishReply,
  HeartbeatBody,
  HeartbeatReply,
  OutputBody,
  OutputReply,
} from '../protocol/worker';
import { nextEvent, rolloutOf } from '../store/events';
import { ApiError } from './errors';
import { type AnyRoute, type Caller, NO_CONTENT, route } from './route';

const TERMINAL_RUN = new Set(['finished', 'stopped', 'failed']);

const CLAIMS_BUDGET_BYTES = 2 * 1024 * 1024;
const CLAIM_BYTES = 160;
/**
 * Per daemon, attempt id → rollout id for the claims it issued (a finish may also name its rollout):
 * CLAIM_BYTES a claim, CLAIMS_BUDGET_BYTES in all; an entry goes when its attempt is finished here,
 * else (an attempt timed out or cancelled elsewhere) the claim issued longest ago goes past the
 * budget: a worker that names its rollout (the SDK's does) never needs it.
 */
const issuedClaims = new WeakMap<DaemonContext, BoundedMap<string, string>>();

function claimsOf(ctx: DaemonContext): BoundedMap<string, string> {
  let claims = issuedClaims.get(ctx);
  if (!claims) {
    claims = new BoundedMap<string, string>(CLAIMS_BUDGET_BYTES);
    issuedClaims.set(ctx, claims);
  }
  return claims;
}

/** The run controller the worker routes report to (set once the cluster is registered). */
function runsOf(ctx: DaemonContext): RunController {
  if (!ctx.runs) throw new ApiError(503, 'unavailable', 'the daemon is still starting: try again');
  return ctx.runs;
}

async function findAttempt(
  ctx: DaemonContext,
  attemptId: string,
  rolloutId: string | undefined,
): Promise<{ rollout: Rollout; attempt: Attempt }> {
  const id = rolloutId ?? claimsOf(ctx).get(attemptId);
  const rollout = id ? await ctx.store.getRollout(id) : null;
  const attempt = rollout
    ? (await ctx.store.listAttempts(rollout.id)).find((a) => a.id === attemptId)
    : undefined;
  if (!rollout || !attempt) {
    throw new ApiError(404, 'not_found', `no attempt ${attemptId}${id ? ` of rollout ${id}` : ''}`, 'id');
  }
  return { rollout, attempt };
}

/** A worker credential acts on its own run only. */
function ownRun(caller: Caller, runId: string | null): void {
  if (caller.kind !== 'worker' || caller.runId === runId) return;
  throw new ApiError(
    403,
    'forbidden',
    `this worker credential is for run ${caller.runId}, not ${runId === null ? 'a rollout outside runs' : `run ${runId}`}`,
    'authorization',
  );
}

/** Does the rollout's run take its rewards from harness.verifier? */
async function rewardsByVerifier(ctx: DaemonContext, rollout: Rollout): Promise<boolean> {
  const run = rollout.run_id ? await ctx.store.getRun(rollout.run_id) : null;
  const config = run ? RunConfig.safeParse(run.config) : null;
  return config?.success === true && config.data.harness.reward === 'verifier';
}

/** What a worker gets for a claimed attempt: a fresh rollout key, base URLs and the run's harness. */
async function claimedAnswer(
  ctx: DaemonContext,
  run: { id: string; config: unknown },
  { rollout, attempt }: { rollout: Rollout; attempt: Attempt },
): Promise<Claimed> {
  // The worker runs the verifier: it gets the argv with the credentials this daemon holds.
  const config = RunConfig.parse(restoreSecrets(ctx.dataDir, `run:${run.id}`, run.config));
  const base = ctx.baseUrl();
  return {
    rollout,
    attempt,
    key: (await ctx.store.issueRolloutKey(rollout.id)) ?? '',
    openai_base_url: `${base}/r/${rollout.id}/v1`,
    anthropic_base_url: `${base}/r/${rollout.id}`,
    input: rollout.input,
    model: config.model.name,
    timeout_s: config.harness.timeout_s,
    heartbeat_s: runsOf(ctx).heartbeatSeconds,
    reward: config.harness.reward,
    ...(config.harness.reward === 'verifier' ? { verifier: config.harness.verifier } : {}),
    ...(config.harness.command ? { command: config.harness.command } : {}),
    sandbox: config.harness.sandbox,
    // Only when persistent: a Python worker of an older release refuses a Claimed with a field it lacks.
    ...(config.harness.mode === 'persistent' ? { mode: config.harness.mode } : {}),
  };
}

/**
 * Claim the run's oldest queued rollout, waiting up to `wait_ms` for one. A worker that hangs up while
 * it waits stops the wait at once and is handed nothing; one that hangs up while its claim is being
 * taken gets its attempt ended as worker_lost (the rollout is queued again), not left to the sweeper.
 */
async function claim(
  ctx: DaemonContext,
  runId: string,
  body: z.output<typeof ClaimBody>,
  signal: AbortSignal,
) {
  const deadline = Date.now() + body.wait_ms;
  for (;;) {
    const run = await ctx.store.getRun(runId);
    if (!run) throw new ApiError(404, 'not_found', `no run ${runId}`, 'id');
    if (TERMINAL_RUN.has(run.status)) throw new ApiError(410, 'gone', `run ${runId} is ${run.status}`, 'id');
    if (signal.aborted) return NO_CONTENT;
    runsOf(ctx).workers.saw(runId, body.worker ?? 'unnamed worker');
    const claimed =
      run.status === 'running' ? await ctx.store.claimRollout({ run_id: runId, worker: body.worker }) : null;
    if (claimed) {
      const answer = await claimedAnswer(ctx, run, claimed);
      if (!signal.aborted) {
        claimsOf(ctx).set(claimed.attempt.id, claimed.rollout.id, CLAIM_BYTES);
        return answer;
      }
      await ctx.store.finishAttempt(
        claimed.attempt.id,
        'failed',
        'the worker hung up before its claim was answered',
        infrastructure('worker_lost'),
      );
      return NO_CONTENT;
    }
    const left = deadline - Date.now();
    if (left <= 0) return NO_CONTENT;
    // Woken by a rollout of the run (queued or requeued), a run status change, or the worker hanging up.
    const wake = rolloutOf(runId);
    await nextEvent(ctx.store, (e) => wake(e) || e.type === 'run', Math.min(left, 1000), signal);
  }
}

/** End the attempt as the worker says; a run rewarded by its verifier needs the verifier's reward. */
async function finish(ctx: DaemonContext, caller: Caller, attemptId: string, body: FinishBody) {
  const { rollout, attempt } = await findAttempt(ctx, attemptId, body.rollout_id);
  ownRun(caller, rollout.run_id);
  if (attempt.status !== 'running') {
    throw new ApiError(409, 'conflict', `attempt ${attempt.id} is already ${attempt.status}`, 'id');
  }
  let { status, error } = body;
  if (status === 'succeeded' && body.reward !== undefined && body.reward_source === 'verifier') {
    // The verifier's reward always counts (the latest reward is the rollout's), also over one
    // the harness posted itself.
    await ctx.store.addReward(rollout.id, {
      value: body.reward,
      source: 'verifier',
      ...(body.reward_detail === undefined ? {} : { detail: body.reward_detail }),
    });
  } else if (status === 'succeeded' && (await rewardsByVerifier(ctx, rollout))) {
    // Never let a harness reward (or none) stand in for the verifier's.
    status = 'failed';
    error =
      'the run takes its reward from harness.verifier, but the worker finished without a verifier reward ' +
      '(use `harness-rl worker`, the Ray workers of workers/python, or runWorker from daemon/worker/worker, which run it)';
  } else if (status === 'succeeded' && body.reward !== undefined && rollout.reward === null) {
    // The harness may have posted its reward itself (POST /api/rollouts/:id/reward); that one counts.
    await ctx.store.addReward(rollout.id, { value: body.reward, source: 'harness' });
  }
  const after = await ctx.store.finishAttempt(
    attempt.id,
    status,
    error,
    status === body.status ? body.failure : harnessFailure('verifier'),
  );
  claimsOf(ctx).delete(attempt.id);
  runsOf(ctx).workers.closeOutput(attempt.id);
  return { rollout: after };
}

export const workerRoutes: AnyRoute[] = [
  route({
    method: 'POST',
    path: '/api/runs/:id/claim',
    summary:
      "claim the run's oldest queued rollout: an attempt on it, a key scoped to it and how to run its harness (a long poll of up to wait_ms)",
    auth: 'worker',
    params: IdParams,
    body: ClaimBody,
    response: Claimed,
    noContent: 'no rollout of the run was queued within wait_ms (or the run is not running): ask again',
    errors: { '410': 'the run is over (finished, stopped or failed): stop asking' },
    handler: async ({ ctx, params, body, caller, signal }) => {
      ownRun(caller, params.id);
      return claim(ctx, params.id, body, signal);
    },
  }),
  route({
    method: 'POST',
    path: '/api/attempts/:id/heartbeat',
    summary: 'the worker still runs the attempt; the answer says whether to stop it (cancelled, timed out…)',
    auth: 'worker',
    params: IdParams,
    body: HeartbeatBody,
    response: HeartbeatReply,
    handler: async ({ ctx, params, body, caller }) => {
      const found = await findAttempt(ctx, params.id, body.rollout_id);
      ownRun(caller, found.rollout.run_id);
      let status = found.attempt.status;
      if (found.rollout.run_id)
        runsOf(ctx).workers.saw(found.rollout.run_id, found.attempt.worker ?? 'unnamed worker');
      if (status === 'running') {
        await ctx.store.heartbeat(found.attempt.id);
        status = (await findAttempt(ctx, found.attempt.id, found.rollout.id)).attempt.status;
      }
      return { status, cancel: status !== 'running' };
    },
  }),
  route({
    method: 'POST',
    path: '/api/attempts/:id/output',
    summary:
      "more of a remote worker's harness stdout and stderr, as it came (kept like the daemon workers' tail)",
    auth: 'worker',
    params: IdParams,
    body: OutputBody,
    response: OutputReply,
    handler: async ({ ctx, params, body, caller }) => {
      const { rollout, attempt } = await findAttempt(ctx, params.id, body.rollout_id);
      ownRun(caller, rollout.run_id);
      if (attempt.status !== 'running')
        throw new ApiError(409, 'conflict', `attempt ${attempt.id} is already ${attempt.status}`, 'id');
      runsOf(ctx).workers.appendOutput(attempt.id, body.chunk);
      return { ok: true as const };
    },
  }),
  route({
    method: 'POST',
    path: '/api/attempts/:id/finish',
    summary: 'the worker ended the attempt (succeeded with a reward, failed, timed out or cancelled)',
    auth: 'worker',
    params: IdParams,
    body: FinishBody,
    response: FinishReply,
    handler: async ({ ctx, params, body, caller }) => finish(ctx, caller, params.id, body),
  }),
];
