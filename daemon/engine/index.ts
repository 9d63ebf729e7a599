// The built-in reference engine: a tiny real transformer on the CPU that serves the vLLM
// OpenAI-compatible subset over HTTP and trains itself with the spec's PPO-clip loss.
import { join } from 'node:path';
import type { Trainer } from '../protocol/training';
import { loadCheckpoint, loadLatestCheckpoint, loadNewestCheckpointIn, saveCheckpoint } from './checkpoint';
import { DEFAULT_MODEL_CONFIG, initParams, type ModelConfig } from './layout';
import { Model } from './model';
import { startServer } from './server';
import { type AdamState, ReferenceTrainer, type TrainableEngine } from './trainer';

export { DEFAULT_MODEL_CONFIG } from './layout';

export interface ReferenceEngine {
  /** http://127.0.0.1:PORT/v1 */
  url: string;
  modelName: string;
  version(): number;
  trainer: Trainer;
  /** Writes a checkpoint of the current weights (and optimizer); returns the meta file's path. */
  checkpoint(): Promise<string>;
  /** Serve (and train on) the newest checkpoint in `dir` from now on; returns its version. */
  load(dir: string): Promise<number>;
  /** The folder checkpoints are written to. */
  checkpointDir: string;
  close(): Promise<void>;
}

export interface ReferenceEngineOptions {
  dataDir: string;
  seed?: number;
  port?: number;
  /** load <dataDir>/engine/latest.json when present (default true) */
  resume?: boolean;
  /** model shape (tests use smaller ones); default DEFAULT_MODEL_CONFIG */
  config?: Partial<ModelConfig>;
  /** write a checkpoint after every k-th train step (0 = never; default 0) */
  checkpointEvery?: number;
  /** a checkpoint's meta file (v<N>.json) to start from when there is none to resume (another run's weights) */
  startFrom?: string;
}

export const REFERENCE_MODEL_NAME = 'reference';

class EngineState implements TrainableEngine {
  adam: AdamState;
  constructor(
    public model: Model,
    public version: number,
    public seed: number,
    adam?: AdamState,
  ) {
    const n = model.params.length;
    this.adam = adam ?? { m: new Float64Array(n), v: new Float64Array(n), t: 0 };
  }
  commit(params: Float64Array, version: number): void {
    this.model = new Model(this.model.config, params);
    this.version = version;
  }
}

export async function startReferenceEngine(options: ReferenceEngineOptions): Promise<ReferenceEngine> {
  const dir = join(options.dataDir, 'engine');
  const seed = options.seed ?? 0;
  let state: EngineState | null = null;
  if (options.resume !== false) {
    const ck = await loadLatestCheckpoint(dir);
    if (ck) state = new EngineState(new Model(ck.config, ck.params), ck.version, ck.seed, ck.adam);
  }
  if (!state && options.startFrom) {
    const ck = await loadCheckpoint(options.startFrom);
    state = new EngineState(new Model(ck.config, ck.params), ck.version, ck.seed, ck.adam);
  }
  if (!state) {
    const config: ModelConfig = { ...DEFAULT_MODEL_CONFIG, ...options.config };
    state = new EngineState(new Model(config, initParams(config, seed)), 0, seed);
  }
  const s = state;
  const checkpoint = () =>
    saveCheckpoint(dir, {
      version: s.version,
      seed: s.seed,
      config: s.model.config,
      params: s.model.params,
      adam: s.adam,
    });
  const every = options.checkpointEvery ?? 0;
  const trainer = new ReferenceTrainer(s, async (r) =>
    every > 0 && r.model_version % every === 0 ? checkpoint() : null,
  );
  const load = async (from: string) => {
    const ck = await loadNewestCheckpointIn(from);
    s.model = new Model(ck.config, ck.params);
    s.adam = ck.adam;
    s.version = ck.version;
    return ck.version;
  };
  const server = await startServer(
    { name: REFERENCE_MODEL_NAME, current: () => ({ model: s.model, version: s.version }), load },
    options.port ?? 0,
  );
  return {
    url: `http://127.0.0.1:${server.port}/v1`,
    modelName: REFERENCE_MODEL_NAME,
    version: () => s.version,
    trainer,
    checkpoint,
    load,
    checkpointDir: dir,
    close: () => server.close(),
  };
}
