// A reference engine for recordings between runs. A recording whose upstream is the built-in engine
// (`reference`, the extension's default) needs a backend even when no run is training: this one
// serves the newest weights on disk (the latest checkpoint of the most recently updated run, else
// fresh weights) and steps aside while a run trains, whose own engine then serves recordings too.
// It is only started when the proxy has no other backend (with `--backend URL` those serve).
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { DaemonContext } from '../context';
import { type ReferenceEngine, startReferenceEngine } from '../engine';
import type { ProxyHandle } from '../proxy';

export const STANDBY_NAME = 'reference:recordings';

export class StandbyEngine {
  private engine: ReferenceEngine | null = null;
  private work: Promise<void> = Promise.resolve();
  private closed = false;
  private readonly unsubscribe: () => void;

  constructor(
    private readonly ctx: DaemonContext,
    private readonly proxy: ProxyHandle,
    /** True while a run trains (its engine is in the pool). */
    private readonly training: () => boolean,
  ) {
    this.unsubscribe = ctx.store.subscribe((ev) => {
      if (ev.type === 'recording' || ev.type === 'run') void this.reconcile();
    });
    void this.reconcile();
  }

  /** The engine's URL while it serves, else null. */
  get url(): string | null {
    return this.engine?.url ?? null;
  }

  /** Starts or stops the engine to match what is needed now (serialized; never throws). */
  reconcile(): Promise<void> {
    this.work = this.work
      .then(async () => {
        const want = await this.wanted();
        if (want && !this.engine) await this.start();
        else if (!want && this.engine) await this.stop();
      })
      .catch((err) => this.ctx.log('standby reference engine failed', { error: String(err) }));
    return this.work;
  }

  /** Stops the engine for good (daemon shutdown). */
  async close(): Promise<void> {
    this.closed = true;
    this.unsubscribe();
    await this.reconcile();
  }

  private async wanted(): Promise<boolean> {
    if (this.closed || this.training()) return false;
    if (this.proxy.pool.size > (this.engine ? 1 : 0)) return false;
    // Scoped recordings too (an evolution's proposer, its critic): each needs a backend as much.
    const recordings = await this.ctx.store.activeRecordings();
    return recordings.some((r) => (r.upstream as { kind?: unknown } | null)?.kind === 'reference');
  }

  private async start(): Promise<void> {
    const dataDir = await this.newestWeights();
    // Never trains, so it never writes a checkpoint into the run's folder.
    const engine = await startReferenceEngine({ dataDir, resume: true, checkpointEvery: 0 });
    this.engine = engine;
    this.proxy.backends.setMinModelVersion(null);
    this.proxy.backends.add(engine.url, { name: STANDBY_NAME, modelVersion: engine.version() });
    this.ctx.log('standby reference engine serves recordings', {
      url: engine.url,
      weights: dataDir,
      model_version: engine.version(),
    });
  }

  private async stop(): Promise<void> {
    const engine = this.engine;
    if (!engine) return;
    this.engine = null;
    this.proxy.backends.remove(engine.url);
    await engine.close().catch(() => {});
  }

  /** The folder whose engine/ holds the newest weights: the most recently updated run with some. */
  private async newestWeights(): Promise<string> {
    const page = await this.ctx.store.listRuns({ limit: 100 });
    const runs = [...page.items].sort((a, b) => b.updated_at.localeCompare(a.updated_at));
    for (const run of runs) {
      const dir = join(this.ctx.dataDir, 'runs', run.id);
      if (existsSync(join(dir, 'engine'))) return dir;
    }
    return this.ctx.dataDir;
  }
}
