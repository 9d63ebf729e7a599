// Token ids and logprobs as compact binary blobs: ids little-endian Int32, logprobs little-endian
// Float64 (so every JSON logprob round-trips bit for bit). 4k ids are 16 KiB instead of ~24 KiB of JSON.
import { endianness } from 'node:os';

const LE = endianness() === 'LE';

/** Encode token ids (non-negative integers < 2^31) as little-endian Int32. */
export function encodeIds(ids: readonly number[] | Int32Array | Uint32Array): Buffer {
  const n = ids.length;
  const out = new Int32Array(n);
  for (let i = 0; i < n; i++) {
    const v = ids[i];
    if (!Number.isInteger(v) || v < 0 || v > 0x7fffffff) {
      throw new RangeError(`token id at ${i} is not an integer in [0, 2^31): ${v}`);
    }
    out[i] = v;
  }
  if (!LE) {
    const buf = Buffer.alloc(n * 4);
    for (let i = 0; i < n; i++) buf.writeInt32LE(out[i], i * 4);
    return buf;
  }
  return Buffer.from(out.buffer, out.byteOffset, out.byteLength);
}

/** Decode a blob written by encodeIds into a typed array (copies, so the result is aligned). */
export function decodeIdsTyped(blob: Uint8Array): Int32Array {
  if (blob.byteLength % 4 !== 0)
    throw new RangeError(`token id blob length ${blob.byteLength} is not a multiple of 4`);
  const n = blob.byteLength / 4;
  if (!LE) {
    const out = new Int32Array(n);
    const view = new DataView(blob.buffer, blob.byteOffset, blob.byteLength);
    for (let i = 0; i < n; i++) out[i] = view.getInt32(i * 4, true);
    return out;
  }
  const out = new Int32Array(n);
  new Uint8Array(out.buffer).set(blob);
  return out;
}

export function decodeIds(blob: Uint8Array): number[] {
  return Array.from(decodeIdsTyped(blob));
}

/** Encode logprobs as little-endian Float64 (exact). */
export function encodeLogprobs(values: readonly number[] | Float64Array | Float32Array): Buffer {
  const n = values.length;
  const out = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    const v = values[i];
    if (typeof v !== 'number') throw new RangeError(`logprob at ${i} is not a number: ${String(v)}`);
    out[i] = v;
  }
  if (!LE) {
    const buf = Buffer.alloc(n * 8);
    for (let i = 0; i < n; i++) buf.writeDoubleLE(out[i], i * 8);
    return buf;
  }
  return Buffer.from(out.buffer, out.byteOffset, out.byteLength);
}

export function decodeLogprobsTyped(blob: Uint8Array): Float64Array {
  if (blob.byteLength % 8 !== 0)
    throw new RangeError(`logprob blob length ${blob.byteLength} is not a multiple of 8`);
  const n = blob.byteLength / 8;
  const out = new Float64Array(n);
  if (!LE) {
    const view = new DataView(blob.buffer, blob.byteOffset, blob.byteLength);
    for (let i = 0; i < n; i++) out[i] = view.getFloat64(i * 8, true);
    return out;
  }
  new Uint8Array(out.buffer).set(blob);
  return out;
}

export function decodeLogprobs(blob: Uint8Array): number[] {
  return Array.from(decodeLogprobsTyped(blob));
}
