// OTLP/HTTP protobuf bodies decoded into the OTLP/JSON shape (protocol/otlp.ts), so one zod schema
// checks both encodings. A reader of exactly the opentelemetry-proto fields the receiver keeps
// (trace.proto, logs.proto, common.proto, resource.proto; field numbers from those files); other
// fields are skipped. The installed @opentelemetry/otlp-transformer only encodes requests (its
// reader decodes export responses), so this is the daemon's own. Malformed input throws a
// ProtoError naming the message and field it was reading; nothing recurses deeper than MAX_DEPTH.
import type { OtlpAnyValue, OtlpKeyValue } from '../protocol/otlp';

export class ProtoError extends Error {
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(`${field}: ${message}`);
  }
}

/** Nesting of AnyValue arrays and key-value lists a body may use. */
const MAX_DEPTH = 16;
const VARINT = 0;
const FIXED64 = 1;
const LEN = 2;
const FIXED32 = 5;

class Reader {
  pos: number;
  constructor(
    private readonly buf: Uint8Array,
    start: number,
    readonly end: number,
    readonly path: string,
  ) {
    this.pos = start;
  }

  fail(message: string): never {
    throw new ProtoError(this.path, message);
  }

  more(): boolean {
    return this.pos < this.end;
  }

  varint(): bigint {
    let result = 0n;
    let shift = 0n;
    for (let i = 0; i < 10; i++) {
      if (this.pos >= this.end) this.fail('truncated varint');
      const b = this.buf[this.pos++];
      result |= BigInt(b & 0x7f) << shift;
      if ((b & 0x80) === 0) return result;
      shift += 7n;
    }
    return this.fail('varint longer than 10 bytes');
  }

  small(): number {
    const v = this.varint();
    if (v > BigInt(Number.MAX_SAFE_INTEGER)) this.fail('value too large');
    return Number(v);
  }

  tag(): { field: number; wire: number } {
    const t = this.small();
    return { field: t >>> 3, wire: t & 7 };
  }

  fixed64(): bigint {
    if (this.pos + 8 > this.end) this.fail('truncated fixed64');
    const view = new DataView(this.buf.buffer, this.buf.byteOffset + this.pos, 8);
    this.pos += 8;
    return view.getBigUint64(0, true);
  }

  double(): number {
    if (this.pos + 8 > this.end) this.fail('truncated double');
    const view = new DataView(this.buf.buffer, this.buf.byteOffset + this.pos, 8);
    this.pos += 8;
    return view.getFloat64(0, true);
  }

  /** A length-delimited field as a reader of its own, for the message named `field`. */
  sub(field: string): Reader {
    const len = this.small();
    if (this.pos + len > this.end)
      throw new ProtoError(`${this.path}.${field}`, `length ${len} runs past its message`);
    const r = new Reader(this.buf, this.pos, this.pos + len, `${this.path}.${field}`);
    this.pos += len;
    return r;
  }

  bytes(): Uint8Array {
    const len = this.small();
    if (this.pos + len > this.end) this.fail(`length ${len} runs past the body`);
    const out = this.buf.subarray(this.pos, this.pos + len);
    this.pos += len;
    return out;
  }

  string(): string {
    return new TextDecoder('utf-8', { fatal: false }).decode(this.bytes());
  }

  hex(): string {
    return Buffer.from(this.bytes()).toString('hex');
  }

  skip(wire: number): void {
    if (wire === VARINT) this.varint();
    else if (wire === FIXED64) this.pos += 8;
    else if (wire === LEN) this.pos += this.small();
    else if (wire === FIXED32) this.pos += 4;
    else this.fail(`unsupported wire type ${wire}`);
    if (this.pos > this.end) this.fail('a skipped field runs past the body');
  }

  /** Reads each field of this message with `on` (which returns false to skip it). */
  fields(on: (field: number, wire: number) => boolean): void {
    while (this.more()) {
      const { field, wire } = this.tag();
      if (!on(field, wire)) this.skip(wire);
    }
  }
}

function anyValue(r: Reader, depth: number): OtlpAnyValue {
  if (depth > MAX_DEPTH) r.fail(`values nested deeper than ${MAX_DEPTH}`);
  const v: OtlpAnyValue = {};
  r.fields((field, wire) => {
    if (field === 1 && wire === LEN) v.stringValue = r.string();
    else if (field === 2 && wire === VARINT) v.boolValue = r.varint() !== 0n;
    else if (field === 3 && wire === VARINT) v.intValue = BigInt.asIntN(64, r.varint()).toString();
    else if (field === 4 && wire === FIXED64) v.doubleValue = r.double();
    else if (field === 5 && wire === LEN)
      v.arrayValue = { values: repeated(r.sub('arrayValue'), (s) => anyValue(s, depth + 1)) };
    else if (field === 6 && wire === LEN)
      v.kvlistValue = { values: repeated(r.sub('kvlistValue'), (s) => keyValue(s, depth + 1)) };
    else if (field === 7 && wire === LEN) v.bytesValue = Buffer.from(r.bytes()).toString('base64');
    else return false;
    return true;
  });
  return v;
}

/** ArrayValue and KeyValueList: field 1, repeated. */
function repeated<T>(r: Reader, item: (r: Reader) => T): T[] {
  const out: T[] = [];
  r.fields((field, wire) => {
    if (field !== 1 || wire !== LEN) return false;
    out.push(item(r.sub('values')));
    return true;
  });
  return out;
}

function keyValue(r: Reader, depth = 0): OtlpKeyValue {
  const kv: OtlpKeyValue = { key: '' };
  r.fields((field, wire) => {
    if (field === 1 && wire === LEN) kv.key = r.string();
    else if (field === 2 && wire === LEN) kv.value = anyValue(r.sub('value'), depth);
    else return false;
    return true;
  });
  return kv;
}

/** Resource { attributes = 1 } and InstrumentationScope { name = 1, version = 2 }. */
function resource(r: Reader): { attributes: OtlpKeyValue[] } {
  const attributes: OtlpKeyValue[] = [];
  r.fields((field, wire) => {
    if (field !== 1 || wire !== LEN) return false;
    attributes.push(keyValue(r.sub('attributes')));
    return true;
  });
  return { attributes };
}

function scope(r: Reader): { name?: string; version?: string } {
  const s: { name?: string; version?: string } = {};
  r.fields((field, wire) => {
    if (field === 1 && wire === LEN) s.name = r.string();
    else if (field === 2 && wire === LEN) s.version = r.string();
    else return false;
    return true;
  });
  return s;
}

function span(r: Reader): Record<string, unknown> {
  const s: Record<string, unknown> = { name: '' };
  const attributes: OtlpKeyValue[] = [];
  r.fields((field, wire) => {
    if (field === 1 && wire === LEN) s.traceId = r.hex();
    else if (field === 2 && wire === LEN) s.spanId = r.hex();
    else if (field === 4 && wire === LEN) s.parentSpanId = r.hex();
    else if (field === 5 && wire === LEN) s.name = r.string();
    else if (field === 6 && wire === VARINT) s.kind = r.small();
    else if (field === 7 && wire === FIXED64) s.startTimeUnixNano = r.fixed64().toString();
    else if (field === 8 && wire === FIXED64) s.endTimeUnixNano = r.fixed64().toString();
    else if (field === 9 && wire === LEN) attributes.push(keyValue(r.sub('attributes')));
    else if (field === 15 && wire === LEN) {
      const status: { code?: number; message?: string } = {};
      const sr = r.sub('status');
      sr.fields((f, w) => {
        if (f === 2 && w === LEN) status.message = sr.string();
        else if (f === 3 && w === VARINT) status.code = sr.small();
        else return false;
        return true;
      });
      s.status = status;
    } else return false;
    return true;
  });
  s.attributes = attributes;
  return s;
}

function logRecord(r: Reader): Record<string, unknown> {
  const l: Record<string, unknown> = {};
  const attributes: OtlpKeyValue[] = [];
  r.fields((field, wire) => {
    if (field === 1 && wire === FIXED64) l.timeUnixNano = r.fixed64().toString();
    else if (field === 2 && wire === VARINT) l.severityNumber = r.small();
    else if (field === 3 && wire === LEN) l.severityText = r.string();
    else if (field === 5 && wire === LEN) l.body = anyValue(r.sub('body'), 0);
    else if (field === 6 && wire === LEN) attributes.push(keyValue(r.sub('attributes')));
    else if (field === 9 && wire === LEN) l.traceId = r.hex();
    else if (field === 10 && wire === LEN) l.spanId = r.hex();
    else if (field === 11 && wire === FIXED64) l.observedTimeUnixNano = r.fixed64().toString();
    else if (field === 12 && wire === LEN) l.eventName = r.string();
    else return false;
    return true;
  });
  l.attributes = attributes;
  return l;
}

/**
 * ResourceSpans / ResourceLogs { resource = 1, scope_spans|scope_logs = 2 }, and ScopeSpans /
 * ScopeLogs { scope = 1, spans|log_records = 2 }: the same layout for both signals.
 */
function resourceItems(
  r: Reader,
  scopeKey: string,
  itemsKey: string,
  item: (r: Reader) => Record<string, unknown>,
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const scopes: Record<string, unknown>[] = [];
  r.fields((field, wire) => {
    if (field === 1 && wire === LEN) out.resource = resource(r.sub('resource'));
    else if (field === 2 && wire === LEN) {
      const sr = r.sub(scopeKey);
      const entry: Record<string, unknown> = {};
      const items: Record<string, unknown>[] = [];
      sr.fields((f, w) => {
        if (f === 1 && w === LEN) entry.scope = scope(sr.sub('scope'));
        else if (f === 2 && w === LEN) items.push(item(sr.sub(itemsKey)));
        else return false;
        return true;
      });
      entry[itemsKey] = items;
      scopes.push(entry);
    } else return false;
    return true;
  });
  out[scopeKey] = scopes;
  return out;
}

function request(
  body: Uint8Array,
  top: string,
  scopeKey: string,
  itemsKey: string,
  item: (r: Reader) => Record<string, unknown>,
) {
  const r = new Reader(body, 0, body.length, 'body');
  const list: Record<string, unknown>[] = [];
  r.fields((field, wire) => {
    if (field !== 1 || wire !== LEN) return false;
    list.push(resourceItems(r.sub(top), scopeKey, itemsKey, item));
    return true;
  });
  return { [top]: list };
}

/** ExportTraceServiceRequest { resource_spans = 1 } in the OTLP/JSON shape. */
export function decodeTracesRequest(body: Uint8Array): unknown {
  return request(body, 'resourceSpans', 'scopeSpans', 'spans', span);
}

/** ExportLogsServiceRequest { resource_logs = 1 } in the OTLP/JSON shape. */
export function decodeLogsRequest(body: Uint8Array): unknown {
  return request(body, 'resourceLogs', 'scopeLogs', 'logRecords', logRecord);
}
