// What a run trains and samples on: its inference backends (the built-in reference engine, vLLM URLs,
// inference node agents, in any mix) and its trainer (the reference engine or a trainer node). After
// each step the new weights reach every inference backend — loaded in place into the local engine,
// over HTTP into a vLLM URL (the trainer's folder must be readable there), or sent over the node's
// WebSocket and loaded by the node — while the proxy routes no new calls to a backend that loads.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { DaemonContext } from '../context';
import { type ReferenceEngine, startReferenceEngine } from '../engine';
import { errorText } from '../error-text';
import { readText, rootUrl, send } from '../http';
import { NEUTRAL_SAMPLING, runSampling } from '../protocol/algorithm';
import type { RunConfig } from '../protocol/config';
import type { VllmFlags, WeightsRef } from '../protocol/node';
import type { Trainer } from '../protocol/training';
import type { BackendPool } from '../proxy/backends';
import { type NodeConnection, NodeRefused } from './nodes/connection';
import type { NodeRegistry } from './nodes/registry';
import { NodeTrainer, type OpenedRun } from './nodes/trainer-client';
import { startingWeightsMeta } from './starting-weights';
import { describeWeights, hasWeights, loadWeightsOverHttp, pruneVersions, sendWeightFiles } from './weights';

interface NodeTarget {
  kind: 'node';
  url: string;
  node: NodeConnection;
  /** The version this run loaded there (undefined: none yet, the base model). */
  loaded?: number;
  /** A load under way, so a reconnect and a health report do not send the weights twice. */
  syncing?: Promise<void>;
}
type Target = { kind: 'engine'; url: string } | { kind: 'http'; url: string } | NodeTarget;

/** The least time the other backends get to load once one serves the new version. */
const SYNC_GRACE_MS = 500;

const isNode = (e: string) => e.startsWith('ws://') || e.startsWith('wss://');
const isHttp = (e: string) => e.startsWith('http://') || e.startsWith('https://');

/** Throws a clear error for endpoints a run cannot use. */
export function checkEndpoints(config: RunConfig): void {
  for (const e of config.inference.endpoints)
    if (e !== 'reference' && !isNode(e) && !isHttp(e))
      throw new Error(
        `inference endpoint ${e}: use reference, an http(s)://…/v1 vLLM URL or a ws(s)://host:port node agent`,
      );
  const t = config.trainer.endpoint;
  if (t !== 'reference' && !isNode(t))
    throw new Error(`trainer endpoint ${t}: use reference or a ws(s)://host:port trainer node agent`);
}

export class RunBackends {
  engine: ReferenceEngine | null = null;
  trainer!: Trainer;
  private nodeTrainer: NodeTrainer | null = null;
  private readonly targets: Target[] = [];
  private readonly acquired: string[] = [];
  /** The version every inference backend should serve. */
  private version = 0;
  private readonly unlisten: (() => void)[] = [];
  /** Weight folders fetched from the trainer node, by version. */
  private readonly fetched = new Map<number, Promise<string>>();

  constructor(
    private readonly ctx: DaemonContext,
    private readonly pool: BackendPool,
    private readonly nodes: NodeRegistry,
    private readonly runId: string,
    private readonly config: RunConfig,
    private readonly signal: AbortSignal,
  ) {}

  /** Starts or connects everything; returns the trainer's version and what it last applied. */
  async open(resume: boolean): Promise<OpenedRun> {
    const { config } = this;
    if (config.model.from_run && config.model.from_run.version === undefined)
      throw new Error('model.from_run has no version: the daemon settles it when the run is created');
    if (config.inference.endpoints.includes('reference') || config.trainer.endpoint === 'reference')
      await this.startEngine(resume);
    // Loaded into an endpoint shared with other runs as the run's adapter (or replacing all: full).
    const weights = { adapter: config.model.lora ? config.model.name : null };
    for (const endpoint of config.inference.endpoints) this.addInference(endpoint, weights);
    await this.checkNodes();
    return this.openTrainer();
  }

  /** The run's own reference engine (inference, training or both). */
  private async startEngine(resume: boolean): Promise<void> {
    const from = this.config.model.from_run;
    this.engine = await startReferenceEngine({
      dataDir: join(this.ctx.dataDir, 'runs', this.runId),
      seed: this.config.schedule.seed,
      resume,
      // Every step, so a restarted daemon resumes with the weights of the run's stored step.
      checkpointEvery: 1,
      ...(from?.version === undefined
        ? {}
        : { startFrom: startingWeightsMeta(this.ctx.dataDir, from.run, from.version) }),
    });
  }

  /** One inference endpoint into the pool: the run's engine, a node (watched), or a plain URL. */
  private addInference(endpoint: string, weights: { adapter: string | null }): void {
    const { config, runId } = this;
    if (endpoint === 'reference') {
      const url = (this.engine as ReferenceEngine).url;
      this.pool.add(url, { name: `reference:${runId}`, modelVersion: this.engine?.version() ?? 0, runId });
      this.targets.push({ kind: 'engine', url });
    } else if (isNode(endpoint)) {
      const node = this.nodes.acquire(
        endpoint,
        'inference',
        config.inference.token,
        runId,
        config.inference.tls_ca,
      );
      this.acquired.push(endpoint);
      const url = rootUrl(endpoint);
      this.pool.add(url, { name: `node ${url}`, modelVersion: null, runId, weights });
      const target: NodeTarget = { kind: 'node', url, node };
      this.targets.push(target);
      this.watchNode(target);
    } else {
      this.pool.add(endpoint, { name: endpoint, modelVersion: null, runId, weights });
      this.targets.push({ kind: 'http', url: endpoint });
    }
  }

  /** An inference node's comings and goings: weights on (re)connect, readiness and lost weights from health. */
  private watchNode(target: NodeTarget): void {
    const { url, node } = target;
    const { runId } = this;
    // A node that comes back (or comes up late) gets the current weights before it serves.
    this.unlisten.push(node.onOpen(() => void this.syncOne(target, this.version)));
    // Its vLLM starting or restarting: the other backends take the calls meanwhile. A restarted vLLM
    // lost the weights loaded at run time (the node's versions no longer name this run): send them
    // again; the node holds calls and reports not ready until they are in.
    this.unlisten.push(
      node.onHealth((h) => {
        this.pool.setReady(url, h.ready, runId);
        if (target.loaded !== undefined && h.versions[runId] === undefined && !target.syncing) {
          this.ctx.log('an inference node lost its weights (its vLLM restarted): sending them again', {
            run_id: runId,
            node: url,
            version: this.version,
          });
          target.loaded = undefined;
          void this.syncOne(target, this.version);
        }
      }),
    );
    if (node.health) this.pool.setReady(url, node.health.ready, runId);
  }

  /** The run's trainer: its own engine's (checkpointed for remote backends) or a trainer node's. */
  private async openTrainer(): Promise<OpenedRun> {
    const { config, runId } = this;
    if (config.trainer.endpoint === 'reference') {
      const engine = this.engine as ReferenceEngine;
      this.trainer = engine.trainer;
      // Backends elsewhere load the starting weights from a checkpoint.
      const remote = this.targets.some((t) => t.kind !== 'engine');
      if (remote && !existsSync(join(engine.checkpointDir, `v${engine.version()}.json`)))
        await engine.checkpoint();
      return { version: engine.version(), last: null, weights: null };
    }
    const node = this.nodes.acquire(
      config.trainer.endpoint,
      'trainer',
      config.trainer.token,
      runId,
      config.trainer.tls_ca,
    );
    this.acquired.push(config.trainer.endpoint);
    this.nodeTrainer = new NodeTrainer(
      node,
      { run_id: runId, model: config.model, seed: config.schedule.seed },
      this.signal,
      this.ctx.log,
    );
    this.trainer = this.nodeTrainer;
    return this.nodeTrainer.open();
  }

  /**
   * Inference nodes: one that refuses us (token, protocol version, role) fails the run with its
   * reason; unreachable ones are fine while another backend can serve (they join when they come up). A
   * node whose vLLM cannot serve the run (vllmMismatch) fails it here, not at its first weight load.
   */
  private async checkNodes(): Promise<void> {
    const nodes = this.targets.filter((t): t is Extract<Target, { kind: 'node' }> => t.kind === 'node');
    if (nodes.length === 0) return;
    const results = await Promise.allSettled(nodes.map((t) => t.node.ready(10_000)));
    for (const r of results) if (r.status === 'rejected' && r.reason instanceof NodeRefused) throw r.reason;
    for (const t of nodes) {
      const problem = t.node.health?.vllm ? vllmMismatch(this.config, t.node.health.vllm) : null;
      if (problem) throw new Error(`inference node ${t.url}: ${problem}`);
    }
    if (nodes.length === this.targets.length && results.every((r) => r.status === 'rejected'))
      throw new Error(
        `no inference node is reachable: ${results.map((r) => (r as PromiseRejectedResult).reason?.message).join('; ')}`,
      );
  }

  /** The weights of `version` as the trainer wrote them (null: the base model, nothing to load). */
  private async weightsOf(version: number): Promise<WeightsRef | null> {
    if (this.nodeTrainer)
      return this.nodeTrainer.weights?.version === version ? this.nodeTrainer.weights : null;
    const engine = this.engine as ReferenceEngine;
    return describeWeights(engine.checkpointDir, version, 'reference', [
      `v${version}.json`,
      `v${version}.bin`,
    ]);
  }

  /** A folder on this machine with the files of `weights` (fetched from the trainer node once). */
  private localCopy(weights: WeightsRef): Promise<string> {
    if (!this.nodeTrainer) return Promise.resolve(weights.path);
    let copy = this.fetched.get(weights.version);
    if (!copy) {
      const dest = join(this.ctx.dataDir, 'runs', this.runId, 'weights', `v${weights.version}`);
      const trainer = this.nodeTrainer;
      copy = hasWeights(dest, weights)
        .then((here) => (here ? dest : trainer.fetchWeights(weights, dest)))
        .then(async (path) => {
          // Full weights are GiBs a version: the newest keep_weights copies stay on this machine.
          const keep = this.config.inference.keep_weights;
          const removed = await pruneVersions(join(dest, '..'), keep, [path]);
          for (const old of removed) this.fetched.delete(Number(old.slice(old.lastIndexOf('/v') + 2)));
          return path;
        });
      copy.catch(() => this.fetched.delete(weights.version));
      this.fetched.set(weights.version, copy);
      for (const old of this.fetched.keys()) if (old < weights.version - 2) this.fetched.delete(old);
    }
    return copy;
  }

  /**
   * Brings every inference backend to `version`. A backend that fails keeps its old version (so the
   * proxy stops routing to it once that is too stale) and the error is logged; the others go on.
   */
  async sync(version: number): Promise<void> {
    this.version = version;
    const started = Date.now();
    const loads = this.targets.map((target) => this.syncOne(target, version));
    // A slow backend does not hold the run: once one backend serves the new version, the others get
    // twice as long as it took (at least SYNC_GRACE_MS) and then finish loading in the background
    // (until then they take no calls: their version is too old).
    let first: () => void = () => {};
    const oneDone = new Promise<void>((r) => (first = r));
    for (const load of loads) void load.then(() => first());
    const grace = oneDone.then(() => {
      const ms = Math.max(SYNC_GRACE_MS, 2 * (Date.now() - started));
      return new Promise((r) => setTimeout(r, ms).unref());
    });
    await Promise.race([Promise.all(loads), grace]);
  }

  private syncOne(target: Target, version: number): Promise<void> {
    if (target.kind !== 'node') return this.syncTarget(target, version);
    // One load at a time per node: the next waits for the one before, whatever became of it.
    const before = target.syncing?.catch(() => {}) ?? Promise.resolve();
    const run = before.then(() => this.syncTarget(target, version));
    const done = run.finally(() => {
      if (target.syncing === done) target.syncing = undefined;
    });
    target.syncing = done;
    return done;
  }

  private async syncTarget(target: Target, version: number): Promise<void> {
    const inPlace = target.kind === 'engine' && !this.nodeTrainer;
    const weights = inPlace ? null : await this.weightsOf(version).catch(() => null);
    if (inPlace || !weights) {
      this.pool.setModelVersion(target.url, version, this.runId);
      return;
    }
    // A node that is down now gets the weights when it reconnects; meanwhile its old version keeps it out.
    if (target.kind === 'node' && !target.node.open) return;
    this.pool.setLoading(target.url, true, this.runId);
    try {
      await this.load(target, weights);
      this.pool.setModelVersion(target.url, version, this.runId);
    } catch (err) {
      const error = errorText(err);
      this.ctx.log('loading new weights failed', { run_id: this.runId, backend: target.url, version, error });
      this.pool.markUnhealthyByUrl(target.url, `loading version ${version} failed: ${error}`, this.runId);
    } finally {
      this.pool.setLoading(target.url, false, this.runId);
    }
  }

  private async load(target: Target, weights: WeightsRef): Promise<void> {
    const model = this.config.model.name;
    if (target.kind === 'engine') {
      await (this.engine as ReferenceEngine).load(await this.localCopy(weights));
    } else if (target.kind === 'http') {
      const root = rootUrl(target.url);
      const post = async (path: string, body: unknown) => {
        const res = await send(root + path, { body: JSON.stringify(body), timeoutMs: 600_000 });
        return { status: res.statusCode ?? 0, text: await readText(res) };
      };
      // A vLLM URL loads from a path it can read: the trainer's folder (a shared filesystem).
      await loadWeightsOverHttp(post, weights.path, model, weights.format);
    } else {
      const node = target.node;
      const key = `${this.runId}:${weights.version}`;
      const check = await node.request({
        t: 'weights_check',
        id: node.nextId(),
        run_id: this.runId,
        weights,
      });
      const id = node.nextId();
      if (check.header.t === 'weights_present' && !check.header.present) {
        const dir = await this.localCopy(weights);
        await sendWeightFiles((h, p) => node.send(h, p), id, weights, dir);
      }
      await node.request({ t: 'weights_load', id, key, run_id: this.runId, model, weights });
      target.loaded = weights.version;
    }
  }

  /** Removes the run's backends from the proxy and lets go of its nodes. */
  async close(): Promise<void> {
    for (const off of this.unlisten.splice(0)) off();
    for (const t of this.targets) this.pool.remove(t.url, this.runId);
    this.targets.length = 0;
    for (const endpoint of this.acquired.splice(0)) this.nodes.release(endpoint, this.runId);
    await this.nodeTrainer?.close();
    await this.engine?.close().catch(() => {});
    this.engine = null;
  }

  /** Extra per-step metrics from a trainer node (grad norm, logprob agreement, …). */
  get trainerMetrics(): Record<string, number | null> {
    return this.nodeTrainer?.metrics ?? {};
  }
}

/**
 * Why a node's vLLM cannot serve this run, or null. Its rank limit refuses a larger adapter
 * (vllm/lora/peft_helper.py:201); raw logprobs (the default, vllm/config/model.py:305) describe T = 1
 * and no truncation, so a run sampling otherwise would train on logprobs of another distribution.
 */
export function vllmMismatch(config: RunConfig, vllm: VllmFlags): string | null {
  const rank = config.model.lora?.rank;
  if (rank !== undefined && !vllm.enable_lora)
    return `its vLLM was started without --enable-lora: it cannot serve this LoRA run (model.lora.rank ${rank})`;
  if (rank !== undefined && rank > vllm.max_lora_rank)
    return `model.lora.rank ${rank} is above its vLLM's --max-lora-rank ${vllm.max_lora_rank}: restart the node with --max-lora-rank ${rank} or more, or lower the rank`;
  const sampling = runSampling(config.algorithm);
  const changed = Object.entries(sampling).filter(
    ([k, v]) => NEUTRAL_SAMPLING[k as keyof typeof NEUTRAL_SAMPLING] !== v,
  );
  if (changed.length > 0 && vllm.logprobs_mode !== 'processed_logprobs')
    return `the run samples with ${changed.map(([k, v]) => `${k} ${v}`).join(', ')} but its vLLM returns ${vllm.logprobs_mode} (the distribution before them): start vLLM with --logprobs-mode processed_logprobs`;
  return null;
}
