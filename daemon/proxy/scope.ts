// Who a proxy call belongs to: a rollout (`/r/<id>/v1/...`, rollout key or daemon token) or a
// recording session (unscoped `/v1/...`): the active one (its key or the daemon token), or the active
// recording whose key is presented (a scoped one records beside the active one). Lookups are cached
// and dropped on the store's rollout/recording events, so the hot path does no store reads.
import { timingSafeEqual } from 'node:crypto';
import { BoundedMap, jsonBytes } from '../bounded-map';
import { restoreSecrets } from '../config/held-secrets';
import type { DaemonContext } from '../context';
import type { RunConfig } from '../protocol/config';
import { FINISHED_ROLLOUT, type Recording, type Rollout } from '../protocol/entities';
import { keyHash } from '../store/ids';
import { ProxyError } from './errors';

export interface Upstream {
  kind: 'openai' | 'anthropic' | 'vllm' | 'reference';
  base_url: string | null;
}

export interface Scope {
  rolloutId: string;
  rollout: Rollout;
  attemptId: string | null;
  recording: Recording | null;
  /** Where a recording's calls go; null = the backend pool. */
  upstream: Upstream | null;
  runConfig: RunConfig | null;
}

interface Entry {
  /** SHA-256 of the rollout's key (the store keeps no plain keys). */
  keyHash: string | null;
  scope: Scope;
  at: number;
  /** The last key that matched, and its scope: the hot path hashes a rollout's key once per entry. */
  verified: { key: string; scope: Scope } | null;
}

const TTL_MS = 2_000;

export function keyOf(headers: Record<string, string | string[] | undefined>): string | null {
  const auth = headers.authorization;
  if (typeof auth === 'string') {
    const m = /^Bearer\s+(.+)$/i.exec(auth.trim());
    if (m) return m[1].trim();
  }
  const x = headers['x-api-key'];
  if (typeof x === 'string' && x.trim()) return x.trim();
  const g = headers['x-goog-api-key']; // Gemini
  if (typeof g === 'string' && g.trim()) return g.trim();
  return null;
}

/**
 * Whether two secrets are equal, in time independent of where they differ. Of different lengths they
 * differ (the lengths are not secret: timingSafeEqual needs equal ones anyway), and no bytes are made
 * for them: every call presents its key, compared with the daemon token first.
 */
function same(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** Where a recording's calls go, with the credentials this daemon holds for it put back. */
function upstreamOf(dataDir: string, recording: Recording | null): Upstream | null {
  const u = (recording && restoreSecrets(dataDir, `recording:${recording.id}`, recording.upstream)) as
    | { kind?: unknown; base_url?: unknown }
    | null
    | undefined;
  if (!u || typeof u !== 'object' || typeof u.kind !== 'string') return null;
  if (!['openai', 'anthropic', 'vllm', 'reference'].includes(u.kind)) return null;
  if (u.kind === 'reference') return null;
  return { kind: u.kind as Upstream['kind'], base_url: typeof u.base_url === 'string' ? u.base_url : null };
}

/**
 * `scope`, when its rollout still takes calls: queued (a standalone rollout, or a run's rollout between
 * attempts) or running. A finished, failed or cancelled rollout, and a stopped recording's, is a 409
 * that names its state, whoever calls (its key or the daemon token): nothing is appended to it.
 */
function stillOpen(scope: Scope): Scope {
  const { rollout, recording } = scope;
  if (!FINISHED_ROLLOUT.has(rollout.status)) return scope;
  const message =
    recording && recording.status === 'stopped'
      ? `recording ${recording.id} is stopped: its rollout ${rollout.id} takes no more calls (start a new recording)`
      : `rollout ${rollout.id} is ${rollout.status}: it takes no more calls`;
  throw new ProxyError(409, message, null, `rollout_${rollout.status}`);
}

/**
 * Bytes the cached scopes may hold: an entry weighs ENTRY_BYTES and its rollout's input and
 * recording as jsonBytes weighs them (run configs are shared, cached apart). Past it the entry
 * looked up longest ago goes; entries older than TTL_MS go at the next lookup that misses, an entry
 * goes at its rollout's or recording's next event, and a finished rollout's is never cached.
 */
const SCOPES_BUDGET_BYTES = 32 * 1024 * 1024;
const ENTRY_BYTES = 1024;
/** Run configs of the runs whose rollouts call: each weighed by jsonBytes, gone at the run's next event. */
const RUNS_BUDGET_BYTES = 16 * 1024 * 1024;
/** Recording key → its rollout id, 256 bytes an entry; past it the one looked up longest ago goes. */
const KEYED_BUDGET_BYTES = 1024 * 1024;

export class Scopes {
  private readonly rollouts = new BoundedMap<string, Entry>(SCOPES_BUDGET_BYTES);
  private readonly runs = new BoundedMap<string, RunConfig | null>(RUNS_BUDGET_BYTES);
  private active: { recording: Recording | null; at: number } | null = null;
  /** Recording keys already matched to their rollout (a recording's key never changes). */
  private readonly keyed = new BoundedMap<string, string>(KEYED_BUDGET_BYTES);
  private readonly unsubscribe: () => void;

  constructor(private readonly ctx: DaemonContext) {
    this.unsubscribe = ctx.store.subscribe(
      (ev) => {
        if (ev.type === 'rollout') this.rollouts.delete(ev.rollout.id);
        else if (ev.type === 'recording') {
          this.active = null;
          this.rollouts.delete(ev.recording.rollout_id);
          if (ev.recording.status === 'stopped')
            this.keyed.deleteWhere((rolloutId) => rolloutId === ev.recording.rollout_id);
        } else if (ev.type === 'run') this.runs.delete(ev.run.id);
      },
      ['rollout', 'recording', 'run'],
    );
  }

  close(): void {
    this.unsubscribe();
  }

  /** The bytes the cached scopes weigh, and how many rollouts they are. */
  get held(): { bytes: number; rollouts: number } {
    return { bytes: this.rollouts.bytes, rollouts: this.rollouts.size };
  }

  /** The scope of `/r/<rolloutId>/…` for a caller presenting `key`; throws 404/401/403. */
  async forRollout(rolloutId: string, key: string | null): Promise<Scope> {
    let entry = await this.entry(rolloutId);
    if (!entry)
      throw new ProxyError(404, `unknown rollout ${JSON.stringify(rolloutId)}`, null, 'unknown_rollout');
    if (key === null)
      throw new ProxyError(
        401,
        'missing API key: send the rollout key as "Authorization: Bearer <key>" or "x-api-key"',
        null,
        'missing_key',
      );
    if (same(key, this.ctx.token)) return stillOpen(entry.scope);
    if (entry.verified && same(key, entry.verified.key)) return stillOpen(entry.verified.scope);
    const hash = keyHash(key);
    // A claim issues a new key: a cached hash may be older than the key presented.
    if (entry.keyHash === null || !same(hash, entry.keyHash)) {
      this.rollouts.delete(rolloutId);
      entry = await this.entry(rolloutId);
      if (!entry?.keyHash || !same(hash, entry.keyHash))
        throw new ProxyError(403, `this key is not valid for rollout ${rolloutId}`, null, 'wrong_key');
    }
    entry.verified = { key, scope: entry.scope };
    return stillOpen(entry.verified.scope);
  }

  /**
   * The scope of unscoped `/v1/…`: the daemon token's is the active recording session; a recording key's
   * is its own recording while that records (the active one, or a scoped one beside it); throws 409
   * when there is no such recording.
   */
  async forUnscoped(key: string | null): Promise<Scope> {
    const recording = await this.activeRecording();
    if (key === null)
      throw new ProxyError(
        401,
        'missing API key: send "Authorization: Bearer <key>" or "x-api-key"',
        null,
        'missing_key',
      );
    const isToken = same(key, this.ctx.token);
    const keyed = isToken ? null : await this.keyedRecording(key);
    if (keyed) return stillOpen(keyed);
    if (!recording)
      throw new ProxyError(
        409,
        'no active recording session: start a recording, or use a rollout-scoped base URL /r/<rolloutId>/v1',
        null,
        'no_active_recording',
      );
    if (!isToken)
      throw new ProxyError(401, 'this key is not valid for the active recording session', null, 'wrong_key');
    const entry = await this.entry(recording.rollout_id);
    if (!entry) throw new ProxyError(404, `the recording's rollout ${recording.rollout_id} is gone`);
    return stillOpen(entry.scope);
  }

  /** The scope of the still active recording whose key `key` is; null for any other key. */
  private async keyedRecording(key: string): Promise<Scope | null> {
    const known = this.keyed.get(key);
    const rolloutId = known ?? (await this.ctx.store.rolloutOfKey(key));
    if (rolloutId === null) return null;
    const entry = await this.entry(rolloutId);
    const recording = entry?.scope.recording;
    if (!entry || !recording || recording.status !== 'active') return null;
    if (known === undefined) {
      // rolloutOfKey also knows rollout keys: only a recording's own key opens it here.
      const hash = await this.ctx.store.getRecordingKeyHash(recording.id);
      if (hash === null || !same(keyHash(key), hash)) return null;
      this.keyed.set(key, rolloutId, 256);
    }
    return entry.scope;
  }

  /** True when `key` is the daemon token (enough for listing models without a recording). */
  isDaemonToken(key: string | null): boolean {
    return key !== null && same(key, this.ctx.token);
  }

  async activeRecording(): Promise<Recording | null> {
    const now = Date.now();
    if (this.active && now - this.active.at < TTL_MS) return this.active.recording;
    const recording = await this.ctx.store.activeRecording();
    this.active = { recording, at: now };
    return recording;
  }

  private async entry(rolloutId: string): Promise<Entry | null> {
    const now = Date.now();
    const hit = this.rollouts.get(rolloutId);
    if (hit && now - hit.at < TTL_MS) return hit;
    this.rollouts.deleteOldestWhile((e) => now - e.at >= TTL_MS);
    const store = this.ctx.store;
    const rollout = await store.getRollout(rolloutId);
    if (!rollout) {
      this.rollouts.delete(rolloutId);
      return null;
    }
    const [hash, attempts, recording, runConfig] = await Promise.all([
      store.getRolloutKeyHash(rolloutId),
      rollout.status === 'running' ? store.listAttempts(rolloutId) : Promise.resolve([]),
      rollout.recording_id ? store.getRecording(rollout.recording_id) : Promise.resolve(null),
      rollout.run_id ? this.runConfig(rollout.run_id) : Promise.resolve(null),
    ]);
    const running = attempts.filter((a) => a.status === 'running').at(-1) ?? null;
    const entry: Entry = {
      keyHash: hash,
      at: now,
      verified: null,
      scope: {
        rolloutId,
        rollout,
        attemptId: running?.id ?? null,
        recording,
        upstream: upstreamOf(this.ctx.dataDir, recording),
        runConfig,
      },
    };
    if (!FINISHED_ROLLOUT.has(rollout.status))
      this.rollouts.set(rolloutId, entry, ENTRY_BYTES + jsonBytes(rollout.input) + jsonBytes(recording));
    return entry;
  }

  private async runConfig(runId: string): Promise<RunConfig | null> {
    if (this.runs.has(runId)) return this.runs.get(runId) ?? null;
    const run = await this.ctx.store.getRun(runId);
    const config = (run?.config ?? null) as RunConfig | null;
    this.runs.set(runId, config, 256 + jsonBytes(config));
    return config;
  }
}
