// Incremental Server-Sent Events parsing of a backend stream (bytes in, events out).
import { isUtf8 } from 'node:buffer';

export interface SseEvent {
  event: string | null;
  data: string;
}

/**
 * UTF-8 bytes to text in pieces, exactly as one streaming TextDecoder gives it (BOM, characters split
 * between reads, invalid bytes). Bytes that are whole, valid UTF-8 while the TextDecoder holds nothing
 * decode the same in one step without it, 2-3x cheaper, and most reads are; the stream's first bytes
 * go through it for its BOM handling. A read ending in an ASCII byte leaves it holding nothing.
 */
export class Utf8Decoder {
  private readonly decoder = new TextDecoder();
  /** The TextDecoder may hold the start of a character, or has not seen the stream's first bytes. */
  private busy = true;

  decode(chunk: Uint8Array): string {
    const n = chunk.length;
    if (!this.busy && n > 0 && chunk[n - 1] < 0x80 && isUtf8(chunk))
      return (Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, n)).toString();
    const text = this.decoder.decode(chunk, { stream: true });
    if (n > 0) this.busy = chunk[n - 1] >= 0x80;
    return text;
  }

  /** What the TextDecoder still holds (a replacement character for a cut-off one). */
  end(): string {
    return this.decoder.decode();
  }
}

export class SseParser {
  private buf = '';
  private cr = false;
  private readonly decoder = new Utf8Decoder();

  /** Feed bytes; returns the events completed by them. */
  push(chunk: Uint8Array): SseEvent[] {
    const out: SseEvent[] = [];
    this.split(chunk, null, out);
    return out;
  }

  /**
   * Feed bytes; `each` gets the data of every event they complete (in order; events without data
   * are skipped) and stops the reading by answering non-null, which `read` then answers. push
   * without an event object or array per event (the relay reads only data).
   */
  read(chunk: Uint8Array, each: (data: string) => string | null): string | null {
    return this.split(chunk, each, null);
  }

  /** Whatever is left when the stream ends (a last event without its blank line). */
  flush(): SseEvent[] {
    const rest = this.buf + this.decoder.end();
    this.buf = '';
    const ev = rest.trim() ? parseBlock(rest) : null;
    return ev ? [ev] : [];
  }

  /** Blocks of the text so far, each to `each` (its data) or parsed onto `out`. */
  private split(
    chunk: Uint8Array,
    each: ((data: string) => string | null) | null,
    out: SseEvent[] | null,
  ): string | null {
    const text = this.decoder.decode(chunk);
    if (!this.cr && text.indexOf('\r') >= 0) this.cr = true;
    const buf = this.buf.length > 0 ? this.buf + text : text;
    let pos = 0;
    let answer: string | null = null;
    if (!this.cr) {
      // The common case (vLLM, OpenAI): LF only. One forward scan, no re-slicing of the buffer.
      for (;;) {
        const end = buf.indexOf('\n\n', pos);
        if (end < 0) break;
        answer = block(buf.slice(pos, end), each, out);
        pos = end + 2;
        if (answer !== null) break;
      }
    } else {
      for (;;) {
        const lf = buf.indexOf('\n\n', pos);
        const crlf = buf.indexOf('\r\n\r\n', pos);
        if (lf < 0 && crlf < 0) break;
        const [end, sep] = crlf >= 0 && (lf < 0 || crlf < lf) ? [crlf, 4] : [lf, 2];
        answer = block(buf.slice(pos, end), each, out);
        pos = end + sep;
        if (answer !== null) break;
      }
    }
    this.buf = pos === 0 ? buf : buf.slice(pos);
    return answer;
  }
}

function block(
  text: string,
  each: ((data: string) => string | null) | null,
  out: SseEvent[] | null,
): string | null {
  if (each === null) {
    const ev = parseBlock(text);
    if (ev) out?.push(ev);
    return null;
  }
  const data = oneDataLine(text) ?? parseBlock(text)?.data;
  return data === undefined ? null : each(data);
}

/** The data of a block that is one `data:` line and nothing else (nearly every event), else null. */
function oneDataLine(block: string): string | null {
  if (block.charCodeAt(0) !== 100 /* d */ || !block.startsWith('data:') || block.indexOf('\n') >= 0)
    return null;
  const v = block.charCodeAt(5) === 32 ? block.slice(6) : block.slice(5);
  return v.endsWith('\r') ? v.slice(0, -1) : v;
}

function parseBlock(block: string): SseEvent | null {
  // One `data:` line and nothing else (nearly every event): no split.
  const one = oneDataLine(block);
  if (one !== null) return { event: null, data: one };
  let event: string | null = null;
  let data: string | null = null;
  for (const rawLine of block.split('\n')) {
    const line = rawLine.endsWith('\r') ? rawLine.slice(0, -1) : rawLine;
    if (line.startsWith('data:')) {
      const v = line.charCodeAt(5) === 32 ? line.slice(6) : line.slice(5);
      data = data === null ? v : `${data}\n${v}`;
    } else if (line.startsWith('event:')) {
      event = line.slice(6).trim();
    }
  }
  return data === null ? null : { event, data };
}
