// A streamed answer relayed to the harness frame by frame while it is assembled for the record; the
// closing frame waits for the record's commit.
import { errorText } from '../error-text';
import { type BackendResponse, timedOut } from '../http';
import type { NewLlmCall } from '../protocol/entities';
import type { BackendKind } from './assemble';
import type { Call } from './call';
import type { Dispatched } from './dispatch';
import type { Json } from './json';
import type { Output, StreamOut } from './output';
import { StreamRelay } from './relay';
import { CompletionToChatStream } from './tito';

/**
 * A (whole or streamed) answer's record: its token fields and status from `json`, the response the
 * harness gets (`respond`, which may consume `json`), then `times`; `done`: the answer is complete
 * (a bridged rollout remembers it), not a stream's record so far.
 */
export type AnswerRecord = (
  json: Json,
  respond: (json: Json) => unknown,
  times: () => Partial<NewLlmCall>,
  done: boolean,
) => Partial<NewLlmCall>;

export async function finishStream(
  call: Call,
  d: Dispatched<BackendResponse>,
  o: { kind: BackendKind; output: Output },
  recordOf: AnswerRecord,
): Promise<void> {
  call.openStream(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
  });
  await new Promise<void>((resolve) => new RelayedStream(call, d, o, recordOf, resolve).start());
}

/** The backend's stream relayed until it ends, fails, passes its deadline or the harness goes away. */
class RelayedStream {
  private readonly out: StreamOut;
  private readonly relay: StreamRelay;
  private deadline: NodeJS.Timeout | undefined;
  private scheduled = false;

  constructor(
    private readonly call: Call,
    private readonly d: Dispatched<BackendResponse>,
    o: { kind: BackendKind; output: Output },
    private readonly recordOf: AnswerRecord,
    private readonly resolve: () => void,
  ) {
    this.out = o.output.open();
    this.relay = new StreamRelay({
      kind: o.kind,
      out: this.out,
      conv: d.bridged
        ? new CompletionToChatStream({
            model: String(d.chatBody.model),
            prompt_ids: d.bridged.prompt_ids,
            thinking: d.bridged.thinking,
          })
        : null,
      logprobEntries: o.output.logprobEntries,
      backendName: d.backendName,
      elapsed: () => call.elapsed(),
    });
    call.snapshot = () => this.record({}, false);
  }

  /** The stream's record with these fields over its times; `done`: the answer is complete. */
  private record(extra: Partial<NewLlmCall>, done: boolean): Partial<NewLlmCall> {
    const relay = this.relay;
    return this.recordOf(
      relay.asm.result(),
      this.respond,
      () => ({ ttft_ms: relay.ttft, http_status: 200, ...extra }),
      done,
    );
  }

  /** The response so far; `json` (asm.result()) is consumed: the native output strips it in place. */
  private readonly respond = (json: Json): unknown => {
    try {
      return this.relay.asm.chunks > 0 ? this.out.assembled(this.relay.asm, json) : null;
    } catch {
      return json;
    }
  };

  start(): void {
    this.call.onClientClose(() => {
      clearTimeout(this.deadline);
      this.resolve();
    });
    // The idle limit (backend_timeout_ms) never fires while a backend sends keep-alive comments: the
    // whole stream has a deadline too.
    const limit = this.call.ctx.config.call_deadline_ms;
    this.deadline = setTimeout(
      () => this.failMid(`the call passed its deadline of ${limit} ms (daemon.call_deadline_ms) mid-stream`),
      Math.max(0, limit - this.call.elapsed()),
    );
    this.d.res.on('data', (buf: Buffer) => this.onData(buf));
    this.d.res.on('end', () => this.onEnd());
    this.d.res.on('close', () => this.onClose());
  }

  private finish(end: () => Promise<unknown>): void {
    clearTimeout(this.deadline);
    if (this.call.settled) {
      this.resolve();
      return;
    }
    this.d.res.removeAllListeners('data');
    end()
      .catch((e) => {
        this.call.ctx.log('proxy: finishing a stream failed', { error: String(e) });
        if (!this.call.res.destroyed) this.call.res.destroy();
      })
      .finally(this.resolve);
  }

  private failMid(message: string, status: 'error' | 'cancelled' = 'error'): void {
    this.finish(() =>
      this.call.complete(
        () => this.record({ status, error: message }, false),
        (problem) => {
          if (problem !== null)
            this.call.ctx.log('proxy: recording a failed stream failed', { error: problem });
          return this.relay.take() + this.out.error(message);
        },
        true,
      ),
    );
  }

  /**
   * The closing frames first: a translator's end() completes its open output item, so what is
   * recorded is the final response the client gets (Responses: `response.completed`).
   */
  private complete(): void {
    this.finish(async () => {
      const closing = this.out.end();
      return this.call.complete(
        () => this.record({ total_ms: this.call.elapsed() }, true),
        (problem) =>
          this.relay.take() +
          (problem === null ? closing : this.out.error(`the call could not be recorded: ${problem}`)),
      );
    });
  }

  /**
   * Frames that arrived in one event-loop turn (libuv reads a socket many times per poll phase, a few
   * hundred bytes each) go out in one write right after it: one syscall instead of dozens, no added
   * latency beyond the end of the current poll phase.
   */
  private flush(): void {
    if (!this.relay.pending || this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => this.flushNow());
  }

  private flushNow(): void {
    this.scheduled = false;
    if (!this.relay.pending || this.call.settled || this.call.res.destroyed) return;
    const ok = this.call.write(this.relay.take());
    if (!ok) {
      this.d.res.pause();
      this.call.res.once('drain', () => this.d.res.resume());
    }
  }

  // Nothing thrown while relaying (a translator, a malformed chunk) may escape: it fails the call.
  private onData(buf: Buffer): void {
    if (this.call.settled) return;
    try {
      const failure = this.relay.read(buf);
      if (failure !== null) this.failMid(failure);
      else this.flush();
    } catch (e) {
      this.failMid(relayError(e));
    }
  }

  private onEnd(): void {
    if (this.call.settled) return;
    try {
      const failure = this.relay.finish();
      if (failure !== null) {
        this.failMid(failure);
        return;
      }
      // The content goes out now; only the closing frame waits for the record's commit.
      this.flushNow();
      if (this.relay.sawDone) this.complete();
      else this.failMid(`backend ${this.d.backendName} ended the stream before [DONE]`);
    } catch (e) {
      this.failMid(relayError(e));
    }
  }

  private onClose(): void {
    if (this.call.settled || this.d.res.complete) return;
    this.failMid(
      timedOut.has(this.d.res)
        ? `backend ${this.d.backendName} went silent mid-stream (timeout ${this.call.ctx.config.backend_timeout_ms} ms)`
        : `backend ${this.d.backendName} closed the connection mid-stream`,
    );
  }
}

const relayError = (e: unknown) => `proxy error while relaying the stream: ${errorText(e)}`;
