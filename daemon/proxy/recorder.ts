// Group commit for llm-call records: records that arrive while a write is in flight (or in the same
// event-loop turn) are written together in one store transaction. Every caller still waits for its
// own record to be committed before its response is released, so nothing is held back or lost.
import type { NewLlmCall } from '../protocol/entities';
import type { Store } from '../store/store';

interface Pending {
  call: NewLlmCall;
  resolve(): void;
  reject(err: unknown): void;
}

export class Recorder {
  private queue: Pending[] = [];
  private running = false;

  constructor(
    private readonly store: Store,
    private readonly maxBatch = 256,
  ) {}

  /** Resolves once `call` is committed. */
  record(call: NewLlmCall): Promise<void> {
    return new Promise((resolve, reject) => {
      this.queue.push({ call, resolve, reject });
      if (!this.running) {
        this.running = true;
        setImmediate(() => void this.drain());
      }
    });
  }

  private async drain(): Promise<void> {
    try {
      while (this.queue.length > 0) {
        const batch = this.queue.splice(0, this.maxBatch);
        try {
          if (batch.length === 1) await this.store.recordLlmCall(batch[0].call);
          else await this.store.recordLlmCalls(batch.map((p) => p.call));
          for (const p of batch) p.resolve();
        } catch {
          // One bad record must not fail its neighbours: write them one by one.
          for (const p of batch) {
            try {
              await this.store.recordLlmCall(p.call);
              p.resolve();
            } catch (err) {
              p.reject(err);
            }
          }
        }
      }
    } finally {
      this.running = false;
    }
  }
}
