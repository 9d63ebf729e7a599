// A streamed answer relayed to the harness frame by frame while it is assembled for the record; the
// closing frame waits for the record's commit.
import { errorText } from '../error-text';
import { timedOut } from '../http';
import type { NewLlmCall } from '../protocol/entities';
import type { BackendKind } from './assemble';
import type { Call } from './call';
import type { Dispatched } from './dispatch';
import type { Json } from './json';
import type { Output } from './output';
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
  d: Dispatched,
  o: { kind: BackendKind; output: Output },
  recordOf: AnswerRecord,
): Promise<void> {
  const raw = call.res;
  call.openStream(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
  });
  const out = o.output.open();
  const relay = new StreamRelay({
    kind: o.kind,
    out,
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
  const asm = relay.asm;

  /** The record so far; `json` (asm.result()) is consumed: the native output strips it in place. */
  const respond = (json: Json): unknown => {
    try {
      return asm.chunks > 0 ? out.assembled(asm, json) : null;
    } catch {
      return json;
    }
  };
  const partial = (): Partial<NewLlmCall> =>
    recordOf(asm.result(), respond, () => ({ ttft_ms: relay.ttft, http_status: 200 }), false);

  call.snapshot = () => partial();
  let deadline: NodeJS.Timeout | undefined;
  await new Promise<void>((resolve) => {
    const finish = (end: () => Promise<unknown>) => {
      clearTimeout(deadline);
      if (call.settled) return resolve();
      d.res.removeAllListeners('data');
      end()
        .catch((e) => {
          call.ctx.log('proxy: finishing a stream failed', { error: String(e) });
          if (!raw.destroyed) raw.destroy();
        })
        .finally(resolve);
    };
    const failMid = (message: string, status: 'error' | 'cancelled' = 'error') =>
      finish(() =>
        call.complete(
          () =>
            recordOf(
              asm.result(),
              respond,
              () => ({ ttft_ms: relay.ttft, http_status: 200, status, error: message }),
              false,
            ),
          (problem) => {
            if (problem !== null) call.ctx.log('proxy: recording a failed stream failed', { error: problem });
            return relay.take() + out.error(message);
          },
          true,
        ),
      );
    // The closing frames first: a translator's end() completes its open output item, so what is
    // recorded is the final response the client gets (Responses: `response.completed`).
    const complete = () =>
      finish(async () => {
        const closing = out.end();
        return call.complete(
          () =>
            recordOf(
              asm.result(),
              respond,
              () => ({ ttft_ms: relay.ttft, http_status: 200, total_ms: call.elapsed() }),
              true,
            ),
          (problem) =>
            relay.take() +
            (problem === null ? closing : out.error(`the call could not be recorded: ${problem}`)),
        );
      });
    call.onClientClose(() => {
      clearTimeout(deadline);
      resolve();
    });
    // The idle limit (backend_timeout_ms) never fires while a backend sends keep-alive comments: the
    // whole stream has a deadline too.
    const limit = call.ctx.config.call_deadline_ms;
    deadline = setTimeout(
      () => failMid(`the call passed its deadline of ${limit} ms (daemon.call_deadline_ms) mid-stream`),
      Math.max(0, limit - call.elapsed()),
    );

    // Frames that arrived in one event-loop turn (libuv reads a socket many times per poll phase, a
    // few hundred bytes each) go out in one write right after it: one syscall instead of dozens,
    // no added latency beyond the end of the current poll phase.
    let scheduled = false;
    const flushNow = () => {
      scheduled = false;
      if (!relay.pending || call.settled || raw.destroyed) return;
      const ok = call.write(relay.take());
      if (!ok) {
        d.res.pause();
        raw.once('drain', () => d.res.resume());
      }
    };
    const flush = () => {
      if (!relay.pending || scheduled) return;
      scheduled = true;
      setImmediate(flushNow);
    };

    // Nothing thrown while relaying (a translator, a malformed chunk) may escape: it fails the call.
    const relayError = (e: unknown) => `proxy error while relaying the stream: ${errorText(e)}`;
    d.res.on('data', (buf: Buffer) => {
      if (call.settled) return;
      try {
        const failure = relay.read(buf);
        if (failure !== null) failMid(failure);
        else flush();
      } catch (e) {
        failMid(relayError(e));
      }
    });
    d.res.on('end', () => {
      if (call.settled) return;
      try {
        const failure = relay.finish();
        if (failure !== null) return failMid(failure);
        // The content goes out now; only the closing frame waits for the record's commit.
        flushNow();
        if (relay.sawDone) complete();
        else failMid(`backend ${d.backendName} ended the stream before [DONE]`);
      } catch (e) {
        failMid(relayError(e));
      }
    });
    d.res.on('close', () => {
      if (call.settled || d.res.complete) return;
      failMid(
        timedOut.has(d.res)
          ? `backend ${d.backendName} went silent mid-stream (timeout ${call.ctx.config.backend_timeout_ms} ms)`
          : `backend ${d.backendName} closed the connection mid-stream`,
      );
    });
  });
}
