// Who may call what: the daemon token may call everything; a rollout key only its own rollout's routes; a
// run's worker credential only the worker routes of that run (workers.ts).
import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import type { DaemonContext } from '../context';
import { FINISHED_ROLLOUT, Id } from '../protocol/entities';
import { keyHash } from '../store/ids';
import { ApiError } from './errors';
import type { Auth, Caller } from './route';

/** Rollout and recording keys look like `hrk_…` (store/ids.ts); a wrong one is a 403, a wrong token a 401. */
const KEY_PREFIX = 'hrk_';

/** A run's worker credential (store/ids.ts newWorkerKey): only that run's worker routes accept it. */
export const WORKER_KEY_PREFIX = 'hrw_';

/** Constant-time comparison of two secrets (hashed first, so lengths never leak). */
export function sameSecret(a: string, b: string): boolean {
  const ha = createHash('sha256').update(a).digest();
  const hb = createHash('sha256').update(b).digest();
  return timingSafeEqual(ha, hb);
}

export function bearerToken(headers: IncomingHttpHeaders): string | null {
  const header = headers.authorization;
  if (!header) return null;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return match ? match[1]! : null;
}

/**
 * Does `key` belong to the rollout (its own key, or the key of the recording it collects)? The store
 * keeps only SHA-256 hashes of keys, so the presented key's hash is compared (in constant time).
 */
export async function isRolloutKey(ctx: DaemonContext, rolloutId: string, key: string): Promise<boolean> {
  if (!Id.safeParse(rolloutId).success) return false; // no rollout has it (the handler's 400 names it)
  const presented = keyHash(key);
  const own = await ctx.store.getRolloutKeyHash(rolloutId);
  if (own && sameSecret(own, presented)) return true;
  const rollout = own ? await ctx.store.getRollout(rolloutId) : null;
  if (rollout?.recording_id) {
    const recordingKey = await ctx.store.getRecordingKeyHash(rollout.recording_id);
    if (recordingKey && sameSecret(recordingKey, presented)) return true;
  }
  return false;
}

/**
 * A rollout key writes (reward, complete, fail) only while its rollout is open, as on the proxy
 * (proxy/scope.ts): a finished, failed or cancelled rollout, or a stopped recording's, is a 409 naming
 * its state. The daemon token may still write (a person labels a stopped recording).
 */
export async function refuseEndedRollout(ctx: DaemonContext, rolloutId: string): Promise<void> {
  const rollout = await ctx.store.getRollout(rolloutId);
  if (!rollout || !FINISHED_ROLLOUT.has(rollout.status)) return;
  const recording = rollout.recording_id ? await ctx.store.getRecording(rollout.recording_id) : null;
  throw new ApiError(
    409,
    `rollout_${rollout.status}`,
    recording && recording.status === 'stopped'
      ? `recording ${recording.id} is stopped: its key can no longer write to its rollout ${rollout.id} (the daemon token can)`
      : `rollout ${rollout.id} is ${rollout.status}: its key can no longer write to it (the daemon token can)`,
    'id',
  );
}

/**
 * The run a worker credential works for: a live one (not revoked) of a run that has not ended; else a
 * 401 (the worker stops).
 */
export async function workerKeyRun(ctx: DaemonContext, key: string): Promise<string> {
  const runId = await ctx.store.runOfWorkerKey(keyHash(key));
  const run = runId ? await ctx.store.getRun(runId) : null;
  if (!run || ['finished', 'failed', 'stopped'].includes(run.status))
    throw new ApiError(
      401,
      'unauthorized',
      'invalid token: this worker credential is unknown or revoked (its run ended)',
      'authorization',
    );
  return run.id;
}

/**
 * The caller of a route, or an ApiError: 401 for a missing or wrong token, 403 for a rollout key used
 * outside its own rollout.
 */
export async function authorize(
  ctx: DaemonContext,
  auth: Auth,
  token: string | null,
  rolloutId: string | undefined,
): Promise<Caller> {
  if (auth === 'none') return { kind: 'daemon' };
  if (!token) {
    throw new ApiError(
      401,
      'unauthorized',
      'missing token: send Authorization: Bearer <token>',
      'authorization',
    );
  }
  if (sameSecret(token, ctx.token)) return { kind: 'daemon' };
  if (auth === 'rollout' && rolloutId && (await isRolloutKey(ctx, rolloutId, token))) {
    return { kind: 'rollout', rolloutId };
  }
  if (auth === 'worker' && token.startsWith(WORKER_KEY_PREFIX)) {
    return { kind: 'worker', runId: await workerKeyRun(ctx, token) };
  }
  if (token.startsWith(WORKER_KEY_PREFIX)) {
    throw new ApiError(
      403,
      'forbidden',
      "a worker credential may only claim its run's rollouts and heartbeat, stream the output of and finish their attempts; this route needs the daemon token",
      'authorization',
    );
  }
  if (token.startsWith(KEY_PREFIX)) {
    throw new ApiError(
      403,
      'forbidden',
      auth === 'rollout' && rolloutId
        ? `this key is not valid for rollout ${JSON.stringify(rolloutId)}: a rollout key may only act on its own rollout`
        : 'a rollout key may only read its rollout and post its reward, complete or fail; this route needs the daemon token',
      'authorization',
    );
  }
  throw new ApiError(
    401,
    'unauthorized',
    'invalid token: use the daemon token (<data>/token)',
    'authorization',
  );
}
