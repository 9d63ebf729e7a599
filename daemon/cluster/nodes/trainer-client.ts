// A trainer node as the scheduler's Trainer. A batch goes as one `train` frame (packed sample
// columns) with the key <run_id>:<step>; when the connection drops mid-step the client waits for the
// node to come back, opens the run again and sends the same batch with the same key — the node
// answers a key it already applied with the stored result, so no step applies twice.
import { mkdir } from 'node:fs/promises';
import { packSamples } from '../../protocol/frames';
import type { LastStep, OpenRun, WeightsRef } from '../../protocol/node';
import type { TrainBatch, Trainer, TrainResult } from '../../protocol/training';
import { WeightsReceiver } from '../weights';
import { type NodeConnection, NodeDisconnected } from './connection';

export interface OpenedRun {
  version: number;
  last: LastStep | null;
  weights: WeightsRef | null;
}

export class NodeTrainer implements Trainer {
  /** The weights of the newest version the node reported. */
  weights: WeightsRef | null = null;
  /** Per-step metrics beyond TrainResult (grad norm, logprob agreement, …) of the last step. */
  metrics: Record<string, number | null> = {};
  private openedOn: number | null = null;
  private generation = 0;
  private readonly offOpen: () => void;

  constructor(
    private readonly node: NodeConnection,
    private readonly run: OpenRun,
    private readonly signal: AbortSignal,
    private readonly log: (message: string, detail?: Record<string, unknown>) => void,
    /** How long to wait for a node that went away before the step fails. */
    private readonly reconnectTimeoutMs = 600_000,
  ) {
    this.offOpen = node.onOpen(() => this.generation++);
  }

  /** Opens the run on the node (its current version, the last step it applied, its weights). */
  async open(): Promise<OpenedRun> {
    await this.node.ready(this.reconnectTimeoutMs);
    const generation = this.generation;
    const reply = await this.node.request({ t: 'open', id: this.node.nextId(), run: this.run }, undefined, {
      signal: this.signal,
    });
    if (reply.header.t !== 'opened')
      throw new Error(`node ${this.node.url} answered open with ${reply.header.t}`);
    this.openedOn = generation;
    this.weights = reply.header.weights;
    return { version: reply.header.version, last: reply.header.last, weights: reply.header.weights };
  }

  async train(batch: TrainBatch): Promise<TrainResult> {
    const key = `${batch.run_id}:${batch.step}`;
    const { meta, payload } = packSamples(batch.samples);
    for (;;) {
      if (this.signal.aborted) throw new Error('the run was halted during a training step');
      try {
        if (this.openedOn !== this.generation || !this.node.open) await this.open();
        const reply = await this.node.request(
          {
            t: 'train',
            id: this.node.nextId(),
            key,
            run_id: batch.run_id,
            step: batch.step,
            model_version: batch.model_version,
            loss: batch.loss,
            samples: meta,
          },
          payload,
          { signal: this.signal },
        );
        if (reply.header.t !== 'trained')
          throw new Error(`node ${this.node.url} answered train with ${reply.header.t}`);
        const { weights, metrics, ...result } = reply.header.result;
        this.weights = weights;
        this.metrics = metrics;
        return { ...result, checkpoint: result.checkpoint ?? weights?.path ?? null };
      } catch (err) {
        if (!(err instanceof NodeDisconnected)) throw err;
        this.log('trainer node went away during a step; sending the batch again once it is back', {
          node: this.node.url,
          key,
        });
      }
    }
  }

  /** Copies the files of `weights` from the node into `dest` (for inference backends elsewhere). */
  async fetchWeights(weights: WeightsRef, dest: string): Promise<string> {
    await mkdir(dest, { recursive: true });
    const id = this.node.nextId();
    const receiver = new WeightsReceiver(`${dest}.partial-${id}`);
    await this.node.request(
      { t: 'weights_fetch', id, run_id: this.run.run_id, version: weights.version },
      undefined,
      {
        streamed: ['file'],
        onStream: (frame) => {
          if (frame.header.t === 'file')
            void receiver.write(frame.header.name, frame.header.offset, frame.payload);
        },
      },
    );
    await receiver.commit(weights, dest);
    return dest;
  }

  async close(): Promise<void> {
    this.offOpen();
  }
}
