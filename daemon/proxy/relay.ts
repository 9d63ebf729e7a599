// The per-event work of relaying a backend stream (stream.ts does the I/O around it): each event's
// data read (straight from its text when chunk-scan.ts knows the shape, else JSON.parse), folded
// into the assembled answer, and turned into the frames the harness gets, which wait in `pending`
// until the caller writes them.

import { type BackendKind, StreamAssembler } from './assemble';
import { ChatChunkScanner } from './chunk-scan';
import { backendErrorMessage } from './errors';
import { fastPaths, parseChunk } from './fast-paths';
import type { Json } from './json';
import type { StreamOut } from './output';
import { SseParser } from './sse';
import type { CompletionToChatStream } from './tito';

export interface RelayOptions {
  kind: BackendKind;
  out: StreamOut;
  /** The bridge's completions → chat conversion, when the backend answers /v1/completions. */
  conv: CompletionToChatStream | null;
  /** Keep vLLM's logprob entries (the harness asked for logprobs). */
  logprobEntries: boolean;
  backendName: string;
  /** Read chunks in vLLM's usual shape from their text (default: as the fast paths are); false: JSON.parse every chunk. */
  scan?: boolean;
  /** The time since the call started (ms), read at the first token. */
  elapsed: () => number;
}

export class StreamRelay {
  readonly asm: StreamAssembler;
  /** Frames not yet written. */
  pending = '';
  sawDone = false;
  /** Time to the first token (ms), once one came. */
  ttft: number | null = null;
  /** Chunks read without JSON.parse (the rest: `asm.chunks - scanned`). */
  scanned = 0;
  private readonly scanner: ChatChunkScanner | null;
  private readonly parser = new SseParser();
  private readonly onData = (data: string) => this.event(data);

  constructor(private readonly o: RelayOptions) {
    this.asm = new StreamAssembler(o.kind, { logprobEntries: o.logprobEntries });
    this.scanner =
      o.kind === 'chat' && !o.conv && (o.scan ?? fastPaths())
        ? // An output without `scanned` (a wire translator) takes the chunk as an object: whole entries.
          new ChatChunkScanner(o.logprobEntries || !o.out.scanned)
        : null;
  }

  /** Relays the events that bytes from the backend complete; a message when the stream must fail. */
  read(bytes: Uint8Array): string | null {
    return this.parser.read(bytes, this.onData);
  }

  /**
   * After the backend's last bytes: relays a last event without its blank line, then (the stream
   * complete) the bridge's closing chunks; a message when the stream must fail.
   */
  finish(): string | null {
    for (const ev of this.parser.flush()) {
      const failure = this.event(ev.data);
      if (failure !== null) return failure;
    }
    if (this.sawDone && this.o.conv) for (const c of this.o.conv.end()) this.forward(c, null);
    return null;
  }

  /** Relays one event's data; a message when the stream must fail with it, else null. */
  event(data: string): string | null {
    const sc = this.scanner;
    if (sc?.scan(data)) {
      if (this.ttft === null && (sc.idsText !== '' || (!sc.reasoning && sc.text !== '')))
        this.ttft = this.o.elapsed();
      this.scanned++;
      if (this.o.out.scanned) {
        this.asm.pushScanned(sc);
        this.pending += this.o.out.scanned(data, sc);
      } else this.forward(sc.chunk(data), data);
      return null;
    }
    if (data === '[DONE]') {
      this.sawDone = true;
      return null;
    }
    // The bridge sent the prompt as ids: the ids vLLM echoes in the first chunk are not read.
    const obj = parseChunk(data, this.o.conv !== null);
    if (obj === null)
      return `backend ${this.o.backendName} sent stream data that is not JSON (or nests too deep): ${data.slice(0, 200)}`;
    if (obj && (obj.error || obj.object === 'error'))
      return `backend ${this.o.backendName} reported an error mid-stream: ${backendErrorMessage(data)}`;
    if (this.ttft === null && Array.isArray(obj.choices) && obj.choices.length > 0) {
      const c = obj.choices[0];
      if ((c.token_ids && c.token_ids.length > 0) || c.delta?.content || c.delta?.tool_calls || c.text)
        this.ttft = this.o.elapsed();
    }
    if (this.o.conv) for (const c of this.o.conv.push(obj)) this.forward(c, null);
    else {
      this.forward(obj, data);
      // The chunks after this one likely share its id, created and model: read them from their text.
      sc?.learn(obj);
    }
    return null;
  }

  /** The frames not yet written, taken. */
  take(): string {
    const p = this.pending;
    this.pending = '';
    return p;
  }

  private forward(obj: Json, data: string | null): void {
    this.asm.push(obj);
    this.pending += this.o.out.chunk(obj, data ?? JSON.stringify(obj));
  }
}
