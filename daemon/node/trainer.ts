// The trainer role: the reference trainer (--engine reference) or a trainer process speaking the node
// protocol over stdio (--trainer-cmd, the Python trainer). A batch carries an idempotency key
// (<run_id>:<step>); the last applied key and its result are kept with the checkpoint, so a batch sent
// again after a reconnect or a restart is answered, never applied twice.
import type { ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describeWeights, sendWeightFiles } from '../cluster/weights';
import { type ReferenceEngine, startReferenceEngine } from '../engine';
import {
  decodeFrame,
  encodeFrame,
  type Frame,
  FrameReader,
  lengthPrefixed,
  unpackSamples,
} from '../protocol/frames';
import {
  LastStep,
  NODE_PROTOCOL_VERSION,
  type NodeMessage,
  type NodeMessageOf,
  type OpenRun,
  type TrainerStepResult,
  type WeightsRef,
} from '../protocol/node';
import type { Peer, Role } from './agent';
import { Supervised } from './process';

export interface TrainerRoleOptions {
  dataDir: string;
  engine?: 'reference';
  trainerCmd?: string;
  /** Added to the trainer process's environment (CUDA_VISIBLE_DEVICES from --gpus). */
  env?: Record<string, string>;
  log: (message: string, detail?: Record<string, unknown>) => void;
}

/** One run's trainer behind the role: the reference engine in process, or the trainer process. */
interface RunTrainer {
  open(run: OpenRun): Promise<NodeMessageOf<'opened'>>;
  train(h: NodeMessageOf<'train'>, payload: Buffer): Promise<TrainerStepResult>;
  close(): Promise<void>;
}

const safe = (s: string) => s.replace(/[^\w.-]/g, '_');

/** The reference trainer of one run, its checkpoints and last step under <data>/runs/<run>. */
class ReferenceRunTrainer implements RunTrainer {
  private engine: ReferenceEngine | null = null;
  private last: LastStep | null = null;
  private weights: WeightsRef | null = null;

  constructor(private readonly dir: string) {}

  async open(run: OpenRun): Promise<NodeMessageOf<'opened'>> {
    if (!this.engine) {
      this.engine = await startReferenceEngine({
        dataDir: this.dir,
        seed: run.seed,
        resume: true,
        checkpointEvery: 1,
      });
      if (!existsSync(join(this.engine.checkpointDir, 'latest.json'))) await this.engine.checkpoint();
      const lastPath = join(this.dir, 'last.json');
      if (existsSync(lastPath)) this.last = LastStep.parse(JSON.parse(await readFile(lastPath, 'utf8')));
      this.weights = await this.describe(this.engine.version());
    }
    return { t: 'opened', id: '', version: this.engine.version(), last: this.last, weights: this.weights };
  }

  private describe(version: number): Promise<WeightsRef> {
    const dir = (this.engine as ReferenceEngine).checkpointDir;
    return describeWeights(dir, version, 'reference', [`v${version}.json`, `v${version}.bin`]);
  }

  async train(h: NodeMessageOf<'train'>, payload: Buffer): Promise<TrainerStepResult> {
    const engine = this.engine;
    if (!engine) throw new Error(`run ${h.run_id} is not open on this trainer (send open first)`);
    if (this.last?.key === h.key) return this.last.result;
    const samples = unpackSamples(h.samples, payload);
    const result = await engine.trainer.train({
      run_id: h.run_id,
      step: h.step,
      model_version: h.model_version,
      loss: h.loss,
      samples,
    });
    this.weights = await this.describe(result.model_version);
    const step: LastStep = { key: h.key, result: { ...result, weights: this.weights, metrics: {} } };
    const tmp = join(this.dir, `last.json.${process.pid}.tmp`);
    await writeFile(tmp, JSON.stringify(step));
    await rename(tmp, join(this.dir, 'last.json'));
    this.last = step;
    return step.result;
  }

  async close(): Promise<void> {
    await this.engine?.close();
    this.engine = null;
  }
}

/** A trainer process on stdio, shared by every run (it keeps its own per-run state). */
class ProcessTrainer {
  private readonly supervised: Supervised;
  private child: ChildProcess | null = null;
  private readonly pending = new Map<string, { resolve(f: Frame): void; reject(e: Error): void }>();
  private seq = 0;
  private welcomed: Promise<void> = Promise.resolve();
  /**
   * The run whose model the process holds (it holds one: a GPU rarely fits two). Another run's batch
   * first reopens that run, which resumes from its checkpoint of the last step; after a restart the
   * process holds none.
   */
  private holding: string | null = null;

  constructor(command: string, log: TrainerRoleOptions['log'], env?: Record<string, string>) {
    this.supervised = new Supervised({
      command,
      name: 'trainer',
      log,
      env,
      pipeStdio: true,
      onStart: (child) => this.attach(child),
      onExit: () => {
        this.holding = null;
        for (const p of this.pending.values())
          p.reject(new Error(`the trainer process exited: ${this.supervised.lastError ?? ''}`));
        this.pending.clear();
      },
    });
  }

  get restarts(): number {
    return this.supervised.restarts;
  }

  get lastError(): string | null {
    return this.supervised.lastError;
  }

  get up(): boolean {
    return this.child !== null && this.child.exitCode === null;
  }

  start(): void {
    this.supervised.start();
  }

  private attach(child: ChildProcess): void {
    this.child = child;
    const reader = new FrameReader((bytes) => {
      let frame: Frame;
      try {
        frame = decodeFrame(bytes);
      } catch (err) {
        this.supervised.lastError = `the trainer sent a bad frame: ${(err as Error).message}`;
        return;
      }
      const h = frame.header;
      const id = h.t === 'welcome' || h.t === 'refused' ? 'hello' : 'id' in h ? h.id : null;
      const p = id ? this.pending.get(id) : undefined;
      if (p && id) {
        this.pending.delete(id);
        p.resolve(frame);
      } else if (h.t === 'error') {
        // An error it could not tie to a request (a frame it could not read has no id: "-"): the
        // requests waiting now are the ones it is about (they are sent one at a time).
        for (const w of this.pending.values()) w.resolve(frame);
        this.pending.clear();
      }
    });
    child.stdout?.on('data', (chunk: Buffer) => {
      try {
        reader.push(chunk);
      } catch (err) {
        this.supervised.lastError = (err as Error).message;
        child.kill();
      }
    });
    child.stdin?.on('error', () => {});
    this.welcomed = this.call('hello', { t: 'hello', protocol_version: NODE_PROTOCOL_VERSION }).then((f) => {
      if (f.header.t === 'refused') throw new Error(`the trainer process refused: ${f.header.message}`);
      if (f.header.t !== 'welcome') throw new Error(`the trainer process answered hello with ${f.header.t}`);
      if (f.header.protocol_version !== NODE_PROTOCOL_VERSION)
        throw new Error(
          `the trainer process speaks protocol ${f.header.protocol_version}, this node ${NODE_PROTOCOL_VERSION}`,
        );
    });
    this.welcomed.catch((err) => {
      this.supervised.lastError = (err as Error).message;
    });
  }

  private call(id: string, header: NodeMessage, payload?: Uint8Array): Promise<Frame> {
    const child = this.child;
    if (!child?.stdin) return Promise.reject(new Error('the trainer process is not running'));
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      for (const part of lengthPrefixed(encodeFrame(header, payload))) child.stdin?.write(part);
    });
  }

  /** Sends a request (its id replaced by our own) and returns the reply; `error` replies throw. */
  async request(header: NodeMessage & { id: string }, payload?: Uint8Array): Promise<Frame> {
    if (!this.up) await new Promise((r) => setTimeout(r, 1000));
    await this.welcomed;
    const id = `p${++this.seq}`;
    const reply = await this.call(id, { ...header, id } as NodeMessage, payload);
    if (reply.header.t === 'error') throw new Error(reply.header.message);
    return reply;
  }

  async ensureOpen(run: OpenRun): Promise<NodeMessageOf<'opened'>> {
    const reply = await this.request({ t: 'open', id: 'x', run });
    if (reply.header.t !== 'opened') throw new Error(`the trainer answered open with ${reply.header.t}`);
    this.holding = run.run_id;
    return reply.header;
  }

  holds(runId: string): boolean {
    return this.holding === runId;
  }

  stop(): Promise<void> {
    return this.supervised.stop();
  }
}

class ProcessRunTrainer implements RunTrainer {
  private run: OpenRun | null = null;
  constructor(private readonly process: ProcessTrainer) {}

  async open(run: OpenRun): Promise<NodeMessageOf<'opened'>> {
    this.run = run;
    return this.process.ensureOpen(run);
  }

  async train(h: NodeMessageOf<'train'>, payload: Buffer): Promise<TrainerStepResult> {
    // After a crash of the process, or when it holds another run's model: reopen the run (it resumes
    // from its checkpoint); after a crash, send again once.
    for (let attempt = 0; ; attempt++) {
      try {
        if (this.run && !this.process.holds(h.run_id)) await this.process.ensureOpen(this.run);
        const reply = await this.process.request(h, payload);
        if (reply.header.t !== 'trained')
          throw new Error(`the trainer answered train with ${reply.header.t}`);
        return reply.header.result;
      } catch (err) {
        if (attempt >= 1 || this.process.up) throw err;
      }
    }
  }

  async close(): Promise<void> {}
}

export class TrainerRole implements Role {
  readonly role = 'trainer' as const;
  readonly backend: string;
  private readonly runs = new Map<string, RunTrainer>();
  private readonly process: ProcessTrainer | null;
  private readonly results = new Map<string, WeightsRef>();
  private busy = 0;
  private lastError: string | null = null;
  private work: Promise<unknown> = Promise.resolve();

  constructor(private readonly options: TrainerRoleOptions) {
    if (!options.engine && !options.trainerCmd)
      throw new Error('the trainer role needs --engine reference or --trainer-cmd');
    this.backend = options.engine ? 'reference' : `trainer-cmd ${options.trainerCmd}`;
    this.process = options.trainerCmd
      ? new ProcessTrainer(options.trainerCmd, options.log, options.env)
      : null;
  }

  async start(): Promise<void> {
    this.process?.start();
  }

  health() {
    const versions: Record<string, number> = {};
    for (const [run, w] of this.results) versions[run] = w.version;
    return {
      ready: this.process ? this.process.up : true,
      queue_depth: Math.max(0, this.busy - 1),
      in_flight: Math.min(this.busy, 1),
      loading: false,
      versions,
      restarts: this.process?.restarts ?? 0,
      last_error: this.lastError ?? this.process?.lastError ?? null,
    };
  }

  private trainerOf(runId: string): RunTrainer {
    let t = this.runs.get(runId);
    if (!t) {
      t = this.process
        ? new ProcessRunTrainer(this.process)
        : new ReferenceRunTrainer(join(this.options.dataDir, 'runs', safe(runId)));
      this.runs.set(runId, t);
    }
    return t;
  }

  /** One request at a time: steps of a trainer are sequential. */
  private serial<T>(fn: () => Promise<T>): Promise<T> {
    this.busy++;
    const next = this.work.then(fn, fn).finally(() => this.busy--);
    this.work = next.catch(() => {});
    return next;
  }

  handle(frame: Frame, peer: Peer): void {
    const h = frame.header;
    const fail = (id: string) => (err: Error) => {
      this.lastError = err.message;
      void peer.send({ t: 'error', id, message: err.message });
    };
    switch (h.t) {
      case 'open':
        this.serial(async () => {
          const opened = await this.trainerOf(h.run.run_id).open(h.run);
          if (opened.weights) this.results.set(h.run.run_id, opened.weights);
          await peer.send({ ...opened, id: h.id });
        }).catch(fail(h.id));
        return;
      case 'train':
        this.serial(async () => {
          const result = await this.trainerOf(h.run_id).train(h, frame.payload);
          if (result.weights) this.results.set(h.run_id, result.weights);
          this.lastError = null;
          await peer.send({ t: 'trained', id: h.id, key: h.key, result });
        }).catch(fail(h.id));
        return;
      case 'weights_fetch':
        void (async () => {
          const weights = this.results.get(h.run_id);
          if (!weights || weights.version !== h.version)
            throw new Error(
              `no weights of version ${h.version} for run ${h.run_id} here (have ${weights?.version ?? 'none'})`,
            );
          await sendWeightFiles((header, payload) => peer.send(header, payload), h.id, weights);
          await peer.send({ t: 'files_end', id: h.id, weights });
        })().catch(fail(h.id));
        return;
      default:
        if ('id' in h)
          void peer.send({ t: 'error', id: h.id, message: `a trainer node does not take ${h.t}` });
    }
  }

  async close(): Promise<void> {
    for (const t of this.runs.values()) await t.close();
    this.runs.clear();
    await this.process?.stop();
  }
}
