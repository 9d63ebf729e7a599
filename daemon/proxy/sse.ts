// Incremental Server-Sent Events parsing of a backend stream (bytes in, events out).

export interface SseEvent {
  event: string | null;
  data: string;
}

export class SseParser {
  private buf = '';
  private cr = false;
  private readonly decoder = new TextDecoder();

  /** Feed bytes; returns the events completed by them. */
  push(chunk: Uint8Array): SseEvent[] {
    const text = this.decoder.decode(chunk, { stream: true });
    if (!this.cr && text.indexOf('\r') >= 0) this.cr = true;
    const buf = this.buf.length > 0 ? this.buf + text : text;
    const out: SseEvent[] = [];
    let pos = 0;
    if (!this.cr) {
      // The common case (vLLM, OpenAI): LF only. One forward scan, no re-slicing of the buffer.
      for (;;) {
        const end = buf.indexOf('\n\n', pos);
        if (end < 0) break;
        const ev = parseBlock(buf.slice(pos, end));
        if (ev) out.push(ev);
        pos = end + 2;
      }
    } else {
      for (;;) {
        const lf = buf.indexOf('\n\n', pos);
        const crlf = buf.indexOf('\r\n\r\n', pos);
        if (lf < 0 && crlf < 0) break;
        const [end, sep] = crlf >= 0 && (lf < 0 || crlf < lf) ? [crlf, 4] : [lf, 2];
        const ev = parseBlock(buf.slice(pos, end));
        if (ev) out.push(ev);
        pos = end + sep;
      }
    }
    this.buf = pos === 0 ? buf : buf.slice(pos);
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
  // One `data:` line and nothing else (nearly every event): no split.
  if (block.charCodeAt(0) === 100 /* d */ && block.startsWith('data:') && block.indexOf('\n') < 0) {
    const v = block.charCodeAt(5) === 32 ? block.slice(6) : block.slice(5);
    return { event: null, data: v.endsWith('\r') ? v.slice(0, -1) : v };
  }
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
