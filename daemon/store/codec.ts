// Token ids and logprobs as compact binary blobs: ids little-endian Int32, logprobs little-endian
// Float64 (so every JSON logprob round-trips bit for bit). 4k ids are 16 KiB instead of ~24 KiB of JSON.
import { endianness } from 'node:os';

const LE = endianness() === 'LE';

/** Encode token ids (non-negative integers < 2^31) from index `from` on as little-endian Int32. */
export function encodeIds(ids: readonly number[] | Int32Array | Uint32Array, from = 0): Buffer {
  const out = ArrayBuffer.isView(ids) ? checkedTypedIds(ids, from) : checkedIds(ids, from);
  return LE ? Buffer.from(out.buffer, out.byteOffset, out.byteLength) : swap32(out);
}

// Plain loops over one array kind each, so V8 keeps them monomorphic (about 10x faster than generic).
function checkedIds(ids: readonly number[], from: number): Int32Array {
  const n = ids.length;
  const out = new Int32Array(Math.max(0, n - from));
  for (let i = from; i < n; i++) {
    const v = ids[i];
    if ((v | 0) !== v || v < 0) throw new RangeError(`token id at ${i} is not an integer in [0, 2^31): ${v}`);
    out[i - from] = v;
  }
  return out;
}

function checkedTypedIds(ids: Int32Array | Uint32Array, from: number): Int32Array {
  const out = new Int32Array(Math.max(0, ids.length - from));
  for (let i = from; i < ids.length; i++) {
    const v = ids[i];
    if (v < 0 || v > 0x7fffffff)
      throw new RangeError(`token id at ${i} is not an integer in [0, 2^31): ${v}`);
    out[i - from] = v;
  }
  return out;
}

function swap32(values: Int32Array): Buffer {
  const buf = Buffer.alloc(values.length * 4);
  for (let i = 0; i < values.length; i++) buf.writeInt32LE(values[i], i * 4);
  return buf;
}

/** Decode a blob written by encodeIds into a typed array (copies, so the result is aligned). */
export function decodeIdsTyped(blob: Uint8Array): Int32Array {
  if (blob.byteLength % 4 !== 0)
    throw new RangeError(`token id blob length ${blob.byteLength} is not a multiple of 4`);
  const n = blob.byteLength / 4;
  const out = new Int32Array(n);
  if (LE) {
    new Uint8Array(out.buffer).set(blob);
  } else {
    const view = new DataView(blob.buffer, blob.byteOffset, blob.byteLength);
    for (let i = 0; i < n; i++) out[i] = view.getInt32(i * 4, true);
  }
  return out;
}

/** decodeIds of a column that may be NULL. */
export const decodeIdsOrNull = (blob: unknown): number[] | null =>
  blob == null ? null : decodeIds(blob as Uint8Array);

export function decodeIds(blob: Uint8Array): number[] {
  // Read straight from the blob when it is aligned (no intermediate copy), else via an aligned copy.
  const typed =
    LE && blob.byteOffset % 4 === 0 && blob.byteLength % 4 === 0
      ? new Int32Array(blob.buffer, blob.byteOffset, blob.byteLength / 4)
      : decodeIdsTyped(blob);
  const n = typed.length;
  const out = new Array<number>(n);
  for (let i = 0; i < n; i++) out[i] = typed[i];
  return out;
}

/** Encode logprobs as little-endian Float64 (exact). */
export function encodeLogprobs(values: readonly number[] | Float64Array | Float32Array): Buffer {
  const out = ArrayBuffer.isView(values) ? Float64Array.from(values) : checkedLogprobs(values);
  if (LE) return Buffer.from(out.buffer, out.byteOffset, out.byteLength);
  const buf = Buffer.alloc(out.length * 8);
  for (let i = 0; i < out.length; i++) buf.writeDoubleLE(out[i], i * 8);
  return buf;
}

function checkedLogprobs(values: readonly number[]): Float64Array {
  const n = values.length;
  const out = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    const v = values[i];
    if (typeof v !== 'number') throw new RangeError(`logprob at ${i} is not a number: ${String(v)}`);
    out[i] = v;
  }
  return out;
}

export function decodeLogprobsTyped(blob: Uint8Array): Float64Array {
  if (blob.byteLength % 8 !== 0)
    throw new RangeError(`logprob blob length ${blob.byteLength} is not a multiple of 8`);
  const n = blob.byteLength / 8;
  const out = new Float64Array(n);
  if (LE) {
    new Uint8Array(out.buffer).set(blob);
  } else {
    const view = new DataView(blob.buffer, blob.byteOffset, blob.byteLength);
    for (let i = 0; i < n; i++) out[i] = view.getFloat64(i * 8, true);
  }
  return out;
}

export function decodeLogprobs(blob: Uint8Array): number[] {
  const typed =
    LE && blob.byteOffset % 8 === 0 && blob.byteLength % 8 === 0
      ? new Float64Array(blob.buffer, blob.byteOffset, blob.byteLength / 8)
      : decodeLogprobsTyped(blob);
  const n = typed.length;
  const out = new Array<number>(n);
  for (let i = 0; i < n; i++) out[i] = typed[i];
  return out;
}
