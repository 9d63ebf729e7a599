// Group commit for llm-call records: records that arrive while a write is in flight (or in the same
// event-loop turn) are written together in one store transaction. Every caller still waits for its
// own record to be committed before its response is released, so nothing is held back or lost.
// A record that arrives after a quiet spell (a lone call: nobody else's answer is due) is written in
// the turn that answered it (on the next tick: after what that turn queued there, such as the uncork
// of a stream's content written just before its record) instead of one turn later.
import type { NewLlmCall } from '../protocol/entities';
import type { Store } from '../store/store';

interface Pending {
  /** Written in one transaction (the records of one proxied call: one per choice when n > 1). */
  calls: NewLlmCall[];
  resolve(): void;
  reject(err: unknown): void;
}

/** A record this long (ms) after the last transaction ended is written at once. */
const QUIET_MS = 1;

export class Recorder {
  private queue: Pending[] = [];
  private running = false;
  /** When the last transaction ended (performance.now()). */
  private idleSince = 0;

  constructor(
    private readonly store: Store,
    private readonly maxBatch = 256,
  ) {}

  /** Records waiting for their transaction (the /metrics queue depth). */
  get depth(): number {
    return this.queue.length;
  }

  /** Resolves once `call` is committed. */
  record(call: NewLlmCall): Promise<void> {
    return this.recordAll([call]);
  }

  /** Resolves once all of `calls` are committed (together, in one transaction). */
  recordAll(calls: NewLlmCall[]): Promise<void> {
    return new Promise((resolve, reject) => {
      this.queue.push({ calls, resolve, reject });
      if (this.running) return;
      this.running = true;
      if (performance.now() - this.idleSince >= QUIET_MS) process.nextTick(() => void this.drain());
      else setImmediate(() => void this.drain());
    });
  }

  private async drain(): Promise<void> {
    try {
      while (this.queue.length > 0) {
        const batch = this.queue.splice(0, this.maxBatch);
        try {
          if (batch.length === 1 && batch[0].calls.length === 1)
            await this.store.recordLlmCall(batch[0].calls[0]);
          else await this.store.recordLlmCalls(batch.flatMap((p) => p.calls));
          for (const p of batch) p.resolve();
        } catch {
          // One bad record must not fail its neighbours: write them one by one.
          for (const p of batch) {
            try {
              if (p.calls.length === 1) await this.store.recordLlmCall(p.calls[0]);
              else await this.store.recordLlmCalls(p.calls);
              p.resolve();
            } catch (err) {
              p.reject(err);
            }
          }
        }
      }
    } finally {
      this.running = false;
      this.idleSince = performance.now();
    }
  }
}
