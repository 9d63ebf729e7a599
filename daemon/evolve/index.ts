// The daemon's running evolutions: started or resumed by the REST API, stopped by it, or interrupted
// with the daemon. An evolution a previous daemon left running (it stopped without a word: a crash) is
// marked interrupted too; `resume` goes on with either from what it stored.
import type { DaemonContext, EvolutionController } from '../context';
import { RunConfig } from '../protocol/config';
import { EvolveLoop, INTERRUPTED } from './loop';

export class Evolutions implements EvolutionController {
  private readonly loops = new Map<string, EvolveLoop>();

  constructor(private readonly ctx: DaemonContext) {}

  /** Mark evolutions a previous daemon left running as interrupted. */
  async recover(): Promise<void> {
    const page = await this.ctx.store.listEvolutions({ limit: 1000 });
    for (const e of page.items.filter((x) => x.status === 'running' && !this.loops.has(x.id)))
      await this.ctx.store.updateEvolution(e.id, {
        status: 'interrupted',
        error: INTERRUPTED,
        finished_at: new Date().toISOString(),
      });
  }

  async start(id: string): Promise<void> {
    await this.launch(id, false);
  }

  async resume(id: string): Promise<void> {
    if (this.loops.has(id)) throw new Error(`evolution ${id} is running`);
    await this.ctx.store.updateEvolution(id, { status: 'running', error: null, finished_at: null });
    await this.launch(id, true);
  }

  private async launch(id: string, resume: boolean): Promise<void> {
    const evolution = await this.ctx.store.getEvolution(id);
    if (!evolution) throw new Error(`no evolution ${id}`);
    const config = RunConfig.parse(evolution.config);
    if (!config.evolve) throw new Error('the config has no evolve block');
    const loop = new EvolveLoop(this.ctx, evolution, { ...config, evolve: config.evolve });
    this.loops.set(id, loop);
    loop.begin(resume);
    void loop.done.finally(() => this.loops.delete(id));
  }

  async stop(id: string): Promise<void> {
    await this.loops.get(id)?.stop();
  }

  async close(): Promise<void> {
    await Promise.all([...this.loops.values()].map((l) => l.halt()));
  }
}
