// Token-exact prefix merging (shared/spec/samples.md, "Merge"). The running sequence after a call k that
// was merged is always S = P_k + R_k (P_k started with everything before it), so "P_{k+1} starts with S"
// is checked against the previous call's arrays directly, without building S.
import type { MergeMode } from '../protocol/algorithm';

export type Ids = ArrayLike<number>;

/** Decides whether call k+1 (its prompt `next`) continues the sequence ending with call k (P_k, R_k). */
export type ContinuesFn = (prevPrompt: Ids, prevResponse: Ids, next: Ids) => boolean;

const MEMCMP_MIN = 32;

function bytesOf(a: Int32Array | Uint32Array, off: number, n: number): Buffer {
  return Buffer.from(a.buffer, a.byteOffset + off * 4, n * 4);
}

function isInt32ish(a: Ids): a is Int32Array | Uint32Array {
  return a instanceof Int32Array || a instanceof Uint32Array;
}

/** a[aOff, aOff+n) equals b[bOff, bOff+n), token by token (memcmp for 32-bit typed arrays). */
export function rangeEqual(a: Ids, aOff: number, b: Ids, bOff: number, n: number): boolean {
  if (n >= MEMCMP_MIN && isInt32ish(a) && isInt32ish(b) && a.constructor === b.constructor) {
    return bytesOf(a, aOff, n).equals(bytesOf(b, bOff, n));
  }
  for (let i = 0; i < n; i++) if (a[aOff + i] !== b[bOff + i]) return false;
  return true;
}

/** `exact`: P_{k+1} starts with all of S = P_k + R_k, token for token. */
export function extendsPrefix(prevPrompt: Ids, prevResponse: Ids, next: Ids): boolean {
  const pl = prevPrompt.length;
  const rl = prevResponse.length;
  if (next.length < pl + rl) return false;
  return rangeEqual(next, 0, prevPrompt, 0, pl) && rangeEqual(next, pl, prevResponse, 0, rl);
}

/** `none`: every call is its own sample. */
export function neverContinues(): boolean {
  return false;
}

export const mergeModes: Record<MergeMode, ContinuesFn> = {
  exact: extendsPrefix,
  none: neverContinues,
};

/** The token at position i of S = P + R. */
export function seqAt(prompt: Ids, response: Ids, i: number): number {
  return i < prompt.length ? prompt[i] : response[i - prompt.length];
}

/** First position where S = P + R and `next` differ; min(|S|, |next|) when one is a prefix of the other. */
export function firstDifference(prompt: Ids, response: Ids, next: Ids): number {
  const sl = prompt.length + response.length;
  const n = Math.min(sl, next.length);
  for (let i = 0; i < n; i++) if (seqAt(prompt, response, i) !== next[i]) return i;
  return n;
}

/** Copies src[srcOff, srcOff+n) into dst at dstOff (TypedArray.set when possible). */
export function copyInto(
  dst: Int32Array | Float64Array,
  dstOff: number,
  src: ArrayLike<number>,
  srcOff: number,
  n: number,
): void {
  if (n <= 0) return;
  if (ArrayBuffer.isView(src)) {
    const view = src as unknown as Int32Array;
    dst.set(srcOff === 0 && n === view.length ? view : view.subarray(srcOff, srcOff + n), dstOff);
  } else if (srcOff === 0 && n === src.length) {
    dst.set(src, dstOff);
  } else {
    for (let i = 0; i < n; i++) dst[dstOff + i] = src[srcOff + i];
  }
}
