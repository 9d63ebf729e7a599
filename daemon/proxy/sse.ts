// Incremental Server-Sent Events parsing of a backend stream (bytes in, events out).

export interface SseEvent {
  event: string | null;
  data: string;
}

export class SseParser {
  private buf = '';
  private readonly decoder = new TextDecoder();

  /** Feed bytes; returns the events completed by them. */
  push(chunk: Uint8Array): SseEvent[] {
    this.buf += this.decoder.decode(chunk, { stream: true });
    const out: SseEvent[] = [];
    for (;;) {
      const lf = this.buf.indexOf('\n\n');
      const crlf = this.buf.indexOf('\r\n\r\n');
      let end: number;
      let sep: number;
      if (lf < 0 && crlf < 0) break;
      if (crlf >= 0 && (lf < 0 || crlf < lf)) {
        end = crlf;
        sep = 4;
      } else {
        end = lf;
        sep = 2;
      }
      const block = this.buf.slice(0, end);
      this.buf = this.buf.slice(end + sep);
      const ev = parseBlock(block);
      if (ev) out.push(ev);
    }
    return out;
  }

  /** Whatever is left when the stream ends (a last event without its blank line). */
  flush(): SseEvent[] {
    const rest = this.buf + this.decoder.decode();
    this.buf = '';
    const ev = rest.trim() ? parseBlock(rest) : null;
    return ev ? [ev] : [];
  }
}

function parseBlock(block: string): SseEvent | null {
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
