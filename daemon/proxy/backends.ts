// The pool of vLLM-compatible inference backends the proxy routes calls to (it reaches them with ../http),
// and what a backend says it serves.
// Routing: a run's rollouts go to the run's own backends when it has any (shared ones otherwise);
// other calls go to shared backends, or with none to any. Among those: rollout affinity (same
// rollout → same backend while it is healthy and eligible, for prefix-cache hits), otherwise least
// outstanding requests; only backends serving a model version >= their run's allowed minimum. A
// backend whose connects fail is skipped for a while.
import { BoundedMap } from '../bounded-map';
import { readText, rootUrl, send } from '../http';
import type { BackendStatus } from '../protocol/api';
import { redactText, redactUrl } from '../redact';

/** What a vLLM-shaped server says it serves (GET /v1/models): its model names and context length. */
export interface ServedModels {
  names: string[];
  /** The first model's max_model_len (null: not given); absent when the server lists no models. */
  maxModelLen?: number | null;
}

/**
 * Asks `root` what it serves. null: unreachable or 5xx (still starting; ask again); no names and no
 * maxModelLen: it answered without a list of models (404, 401, not JSON).
 */
export async function askServedModels(root: string, timeoutMs: number): Promise<ServedModels | null> {
  let text: string;
  let status: number | undefined;
  try {
    const res = await send(`${root}/v1/models`, { method: 'GET', timeoutMs });
    text = await readText(res);
    status = res.statusCode;
  } catch {
    return null;
  }
  if (status === undefined || status >= 500) return null;
  let data: unknown;
  try {
    data = status === 200 ? (JSON.parse(text) as { data?: unknown }).data : undefined;
  } catch {}
  if (!Array.isArray(data)) return { names: [] };
  const len = (data[0] as { max_model_len?: unknown } | undefined)?.max_model_len;
  return {
    names: data.map((m: { id?: unknown }) => String(m?.id)),
    maxModelLen: typeof len === 'number' ? len : null,
  };
}

export interface BackendOptions {
  name?: string;
  modelVersion?: number | null;
  runId?: string | null;
  /**
   * What a run's weights are loaded into it as: a LoRA adapter's name, or null for full weights, which
   * replace the model for every run on it. Another run on the same URL with the same adapter name, or
   * either with full weights, would overwrite the other's weights: `add` refuses it.
   */
  weights?: { adapter: string | null };
}

/**
 * The inference backends the proxy routes to; the cluster adds the reference engine or node agents.
 * A backend added for a run (`runId`) serves only that run's rollouts, and a run with backends of its
 * own never samples from another's; shared backends (`runId` null: `--backend URL`s) serve the rest.
 * A backend is a URL for one run (or shared): two runs on one vLLM or node are two backends, each with
 * its own version and state, so the methods that change one name the run too (null: the shared one).
 */
export interface Backends {
  add(url: string, options?: BackendOptions): void;
  remove(url: string, runId?: string | null): void;
  /** Record which weight version a backend now serves (after a weight push). */
  setModelVersion(url: string, version: number, runId?: string | null): void;
  /**
   * Only route to backends of `runId` (null: the shared ones) serving a version >= min (bounded
   * staleness); min null = any.
   */
  setMinModelVersion(min: number | null, runId?: string | null): void;
  /** While true the backend takes no new calls (weights are loading); calls that find none wait. */
  setLoading(url: string, loading: boolean, runId?: string | null): void;
  /**
   * False while what serves behind the URL is not up (a node's vLLM starting or restarting): no new
   * calls, as while loading, so the other backends take them.
   */
  setReady(url: string, ready: boolean, runId?: string | null): void;
}

const keyOf = (url: string, runId: string | null | undefined) => `${runId ?? ''} ${url}`;

export interface Backend {
  url: string;
  root: string;
  name: string;
  /** Headers every request to it carries (a fixed target's key); none for the pool's. */
  headers?: Record<string, string>;
  /** The run whose weights it serves (only that run's rollouts reach it); null = shared. */
  runId: string | null;
  modelVersion: number | null;
  outstanding: number;
  total: number;
  unhealthyUntil: number;
  lastError: string | null;
  /** Served model names from /v1/models, null until known. */
  models: string[] | null;
  /** The context length the backend reports (vLLM's max_model_len), null until known. */
  maxModelLen: number | null;
  /** The model-list fetch in flight, if any. */
  modelsLoading: Promise<void> | null;
  /** New weights are loading: no new calls until they are in. */
  loading: boolean;
  /** What serves behind the URL is up (see Backends.setReady). */
  ready: boolean;
  weights: BackendOptions['weights'] | null;
}

/** Takes no new calls for now: loading weights or not up yet; calls that find only such wait. */
const held = (b: Backend): boolean => b.loading || !b.ready;

const AFFINITY_BUDGET_BYTES = 8 * 1024 * 1024;
const AFFINITY_ENTRY_BYTES = 96;

export class BackendPool implements Backends {
  private readonly backends = new Map<string, Backend>();
  /**
   * Rollout id → the backend that served it last. AFFINITY_ENTRY_BYTES an entry (its id and the Map's
   * slots), at most AFFINITY_BUDGET_BYTES together: past it, the rollout that picked longest ago goes;
   * a rollout's entry goes when it finishes (`forgetRollout`).
   */
  private readonly affinity: BoundedMap<string, Backend>;
  /** Per run id (null: shared backends), the lowest model version that may serve. */
  private readonly minVersions = new Map<string | null, number>();
  private rr = 0;
  private ordered: Backend[] = [];
  /** Told what a backend serves each time it is asked (the bridge loads those models' tokenizers). */
  onServed: ((root: string, models: string[]) => void) | null = null;
  /** The backends of each run id (null: shared ones), in insertion order. */
  private byRun = new Map<string | null, Backend[]>();

  constructor(
    readonly timeoutMs: number,
    readonly unhealthyMs = 5_000,
    affinityBudgetBytes = AFFINITY_BUDGET_BYTES,
  ) {
    this.affinity = new BoundedMap(affinityBudgetBytes);
  }

  /** A finished rollout picks no more backends. */
  forgetRollout(rolloutId: string): void {
    this.affinity.delete(rolloutId);
  }

  /** How many rollouts have a backend to return to. */
  get affinities(): number {
    return this.affinity.size;
  }

  add(url: string, options: BackendOptions = {}): void {
    const existing = this.backends.get(keyOf(url, options.runId));
    if (!existing && options.weights) this.checkWeightsApart(url, options.runId ?? null, options.weights);
    if (existing) {
      if (options.name) existing.name = options.name;
      if (options.modelVersion !== undefined) existing.modelVersion = options.modelVersion;
      return;
    }
    const b: Backend = {
      url,
      root: rootUrl(url),
      name: options.name ?? redactUrl(url),
      runId: options.runId ?? null,
      modelVersion: options.modelVersion ?? null,
      outstanding: 0,
      total: 0,
      unhealthyUntil: 0,
      lastError: null,
      models: null,
      maxModelLen: null,
      modelsLoading: null,
      loading: false,
      ready: true,
      weights: options.weights ?? null,
    };
    this.backends.set(keyOf(url, b.runId), b);
    this.regroup();
    void this.refreshModels(b);
    this.notify();
  }

  private checkWeightsApart(url: string, runId: string | null, weights: { adapter: string | null }): void {
    for (const other of this.backends.values()) {
      if (other.url !== url || other.runId === runId || !other.weights) continue;
      const theirs = other.weights.adapter;
      if (weights.adapter !== null && theirs !== null && weights.adapter !== theirs) continue;
      throw new Error(
        theirs === null || weights.adapter === null
          ? `${url} already serves run ${other.runId}, and full weights (no LoRA) would replace the other run's model: give each full-weights run its own inference endpoints`
          : `${url} already serves run ${other.runId} with the LoRA adapter "${theirs}": give this run another model.name (its adapter is loaded under that name)`,
      );
    }
  }

  remove(url: string, runId: string | null = null): void {
    const b = this.backends.get(keyOf(url, runId));
    if (!b) return;
    this.backends.delete(keyOf(url, runId));
    this.regroup();
    this.affinity.deleteWhere((v) => v === b);
  }

  private regroup(): void {
    this.ordered = [...this.backends.values()];
    this.byRun = new Map();
    for (const b of this.ordered) {
      const group = this.byRun.get(b.runId);
      if (group) group.push(b);
      else this.byRun.set(b.runId, [b]);
    }
  }

  setModelVersion(url: string, version: number, runId: string | null = null): void {
    const b = this.backends.get(keyOf(url, runId));
    if (b) b.modelVersion = version;
    this.notify();
  }

  setMinModelVersion(min: number | null, runId: string | null = null): void {
    if (min === null) this.minVersions.delete(runId);
    else this.minVersions.set(runId, min);
    this.notify();
  }

  setLoading(url: string, loading: boolean, runId: string | null = null): void {
    const b = this.backends.get(keyOf(url, runId));
    if (!b || b.loading === loading) return;
    b.loading = loading;
    if (!loading) {
      // Served models may have changed (a LoRA adapter loaded under the run's model name).
      b.models = null;
      void this.refreshModels(b).then(() => this.notify());
    }
    this.notify();
  }

  setReady(url: string, ready: boolean, runId: string | null = null): void {
    const b = this.backends.get(keyOf(url, runId));
    if (!b || b.ready === ready) return;
    b.ready = ready;
    if (ready) {
      // What it serves is known only now (the served names are asked for again).
      b.models = null;
      void this.refreshModels(b).then(() => this.notify());
    }
    this.notify();
  }

  /** Whether some backend a call of `runId` could use is loading weights or coming up. */
  loading(runId: string | null): boolean {
    return this.candidates(runId).some(held);
  }

  private waiters: (() => void)[] = [];

  private notify(): void {
    if (this.waiters.length === 0) return;
    const waiters = this.waiters;
    this.waiters = [];
    for (const wake of waiters) wake();
  }

  /** Resolves true when backends, versions or loading change within `timeoutMs`, else false. */
  changed(timeoutMs: number): Promise<boolean> {
    return new Promise((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        resolve(true);
      };
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w !== wake);
        resolve(false);
      }, timeoutMs);
      this.waiters.push(wake);
    });
  }

  list(): BackendStatus[] {
    const now = Date.now();
    return [...this.backends.values()].map((b) => ({
      url: redactUrl(b.url),
      name: redactText(b.name),
      run_id: b.runId,
      model_version: b.modelVersion,
      outstanding: b.outstanding,
      total: b.total,
      healthy: b.unhealthyUntil <= now && b.ready,
      last_error: b.lastError === null ? null : redactText(b.lastError),
      models: b.models,
    }));
  }

  get size(): number {
    return this.backends.size;
  }

  private versionOk(b: Backend): boolean {
    const min = this.minVersions.get(b.runId);
    return min === undefined || (b.modelVersion ?? 0) >= min;
  }

  /** The backends that may serve a call of `runId` (see the file comment). */
  private candidates(runId: string | null): Backend[] {
    if (runId !== null) {
      const own = this.byRun.get(runId);
      if (own) return own;
    }
    return this.byRun.get(null) ?? (runId === null ? this.ordered : []);
  }

  private eligible(b: Backend, now: number): boolean {
    return b.unhealthyUntil <= now && !held(b) && this.versionOk(b);
  }

  /**
   * The backend for a request of `affinityKey` (a rollout id) of run `runId` (null: not a run's),
   * skipping `exclude`; null if none is eligible.
   */
  pick(
    affinityKey: string | null,
    exclude?: ReadonlySet<Backend>,
    runId: string | null = null,
  ): Backend | null {
    const now = Date.now();
    const all = this.candidates(runId);
    if (affinityKey !== null) {
      const b = this.affinity.get(affinityKey);
      if (
        b &&
        this.backends.get(keyOf(b.url, b.runId)) === b &&
        all.includes(b) &&
        this.eligible(b, now) &&
        !exclude?.has(b)
      )
        return b;
    }
    let best: Backend | null = null;
    let fallback: Backend | null = null;
    const start = all.length > 0 ? this.rr++ % all.length : 0;
    for (let i = 0; i < all.length; i++) {
      const b = all[(start + i) % all.length];
      if (exclude?.has(b)) continue;
      if (!this.eligible(b, now)) {
        // All unhealthy: still try the one whose failure is oldest rather than refuse outright.
        if (this.versionOk(b) && !held(b) && (!fallback || b.unhealthyUntil < fallback.unhealthyUntil))
          fallback = b;
        continue;
      }
      if (!best || b.outstanding < best.outstanding) best = b;
    }
    best ??= fallback;
    if (best && affinityKey !== null)
      this.affinity.set(affinityKey, best, AFFINITY_ENTRY_BYTES + 2 * affinityKey.length);
    return best;
  }

  markUnhealthy(b: Backend, error: string): void {
    b.unhealthyUntil = Date.now() + this.unhealthyMs;
    b.lastError = error;
  }

  markUnhealthyByUrl(url: string, error: string, runId: string | null = null): void {
    const b = this.backends.get(keyOf(url, runId));
    if (b) this.markUnhealthy(b, error);
  }

  markHealthy(b: Backend): void {
    if (b.unhealthyUntil !== 0) {
      b.unhealthyUntil = 0;
      b.lastError = null;
      this.notify();
    }
    if (b.models === null) void this.refreshModels(b);
  }

  /** Served model names over all healthy backends (fetched from each backend's /v1/models). */
  async models(): Promise<string[]> {
    const now = Date.now();
    const live = [...this.backends.values()].filter((b) => b.unhealthyUntil <= now);
    await Promise.all(live.filter((b) => b.models === null).map((b) => this.refreshModels(b)));
    return [...new Set(live.flatMap((b) => b.models ?? []))];
  }

  /** Asks `b` for its served names (one request at a time; `timeoutMs` default: 10 s at most). */
  refreshModels(b: Backend, timeoutMs = Math.min(this.timeoutMs, 10_000)): Promise<void> {
    b.modelsLoading ??= this.fetchModels(b, timeoutMs).finally(() => {
      b.modelsLoading = null;
    });
    return b.modelsLoading;
  }

  /**
   * A backend that answers without a list of models (404, 401, not JSON) lists none ([]: asked once,
   * not per call); one that is unreachable or answers 5xx (still starting) is asked again next call.
   */
  private async fetchModels(b: Backend, timeoutMs: number): Promise<void> {
    const served = await askServedModels(b.root, timeoutMs);
    if (!served) return;
    b.models = served.names;
    if (served.maxModelLen !== undefined) b.maxModelLen = served.maxModelLen;
    this.onServed?.(b.root, served.names);
  }
}
