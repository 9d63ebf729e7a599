// What a run's loop (run-loop.ts) and an evaluation's loop (eval/loop.ts) share: the lifecycle — begin;
// stop (the subclass marks it stopped); halt at daemon shutdown (it stays running for the next daemon)
// — the check that ends the body once aborted, and the run's backends, opened at the start of the body
// and closed (the proxy's version floor for the run lifted) before the loop releases its workers.
import type { DaemonContext } from '../context';
import { errorText } from '../error-text';
import type { RunConfig } from '../protocol/config';
import type { ProxyHandle } from '../proxy';
import type { NodeRegistry } from './nodes/registry';
import type { OpenedRun } from './nodes/trainer-client';
import { RunBackends } from './run-backends';

/** The body ended because the loop was aborted (stop or halt), not because it failed. */
export class Halted extends Error {
  constructor() {
    super('halted');
  }
}

export abstract class BackendLoop {
  protected readonly abort = new AbortController();
  protected stopRequested = false;
  protected backends: RunBackends | null = null;
  done: Promise<void> = Promise.resolve();

  constructor(
    protected readonly ctx: DaemonContext,
    protected readonly proxy: ProxyHandle,
    protected readonly nodes: NodeRegistry,
    readonly runId: string,
    protected readonly config: RunConfig,
  ) {}

  begin(released: () => Promise<void>): void {
    this.done = this.execute(released);
  }

  /** Stop it for good: the subclass cancels its open work and marks it stopped. */
  async stop(): Promise<void> {
    this.stopRequested = true;
    this.abort.abort();
    await this.done;
  }

  /** Daemon shutdown: end the loop but leave it running, so the next daemon resumes it. */
  async halt(): Promise<void> {
    this.abort.abort();
    await this.done;
  }

  protected abstract execute(released: () => Promise<void>): Promise<void>;

  protected get store() {
    return this.ctx.store;
  }

  protected check(): void {
    if (this.abort.signal.aborted) throw new Halted();
  }

  /** The run's backends started or connected (`resume`: the run's own checkpoint); what the trainer opened at. */
  protected async openBackends(resume: boolean): Promise<OpenedRun> {
    const backends = new RunBackends(
      this.ctx,
      this.proxy.pool,
      this.nodes,
      this.runId,
      this.config,
      this.abort.signal,
    );
    this.backends = backends;
    const opened = await backends.open(resume);
    this.check();
    return opened;
  }

  /** Close the backends (and lift the run's version floor), then call `released` (never throws). */
  protected async closeBackends(released: () => Promise<void>, what: string): Promise<void> {
    if (this.backends) {
      await this.backends.close().catch(() => {});
      this.proxy.backends.setMinModelVersion(null, this.runId);
      this.backends = null;
    }
    await released().catch((err) => this.ctx.log(`releasing ${what} failed`, { error: errorText(err) }));
  }
}
