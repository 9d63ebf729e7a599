import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decodeIds, decodeLogprobs, encodeIds, encodeLogprobs } from './codec';
import { newId, newKey } from './ids';

describe('token blob codec', () => {
  it('stores token ids as little-endian int32 and reads them back unchanged', () => {
    const blob = encodeIds([1, 256, 0x7fffffff, 0]);
    expect(blob.byteLength).toBe(16);
    expect([...blob.subarray(0, 8)]).toEqual([1, 0, 0, 0, 0, 1, 0, 0]);
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 0x7fffffff }), { maxLength: 5000 }), (ids) => {
        expect(decodeIds(encodeIds(ids))).toEqual(ids);
      }),
    );
  });

  it('stores logprobs as float64 so every JSON number round-trips bit for bit', () => {
    const tricky = [-0, 0, 5e-324, -1.7976931348623157e308, -0.1, -1e-7, -23.025850929940457, -Infinity];
    expect(decodeLogprobs(encodeLogprobs(tricky))).toEqual(tricky);
    expect(Object.is(decodeLogprobs(encodeLogprobs([-0]))[0], -0)).toBe(true);
    fc.assert(
      fc.property(fc.array(fc.double({ noNaN: true }), { maxLength: 2000 }), (values) => {
        const back = decodeLogprobs(encodeLogprobs(values));
        expect(JSON.stringify(back)).toBe(JSON.stringify(values));
        for (let i = 0; i < back.length; i++) expect(Object.is(back[i], values[i])).toBe(true);
      }),
    );
  });

  it('decodes blobs that sit at odd offsets inside a larger buffer', () => {
    const inner = encodeLogprobs([-1.5, -2.25]);
    const big = Buffer.alloc(inner.byteLength + 3);
    inner.copy(big, 3);
    expect(decodeLogprobs(big.subarray(3))).toEqual([-1.5, -2.25]);
    const ids = encodeIds([7, 8, 9]);
    const big2 = Buffer.alloc(ids.byteLength + 1);
    ids.copy(big2, 1);
    expect(decodeIds(big2.subarray(1))).toEqual([7, 8, 9]);
  });

  it('rejects token ids that int32 cannot hold exactly, and truncated blobs', () => {
    expect(() => encodeIds([1, -1])).toThrow(/token id at 1/);
    expect(() => encodeIds([2 ** 31])).toThrow(RangeError);
    expect(() => encodeIds([1.5])).toThrow(RangeError);
    expect(() => decodeIds(Buffer.alloc(5))).toThrow(RangeError);
    expect(() => decodeLogprobs(Buffer.alloc(12))).toThrow(RangeError);
  });
});

describe('ids and keys', () => {
  it('are URL-safe, prefixed, unique and sort in creation order', () => {
    const ids = Array.from({ length: 5000 }, () => newId('ro'));
    expect(new Set(ids).size).toBe(ids.length);
    expect([...ids].sort()).toEqual(ids);
    for (const id of ids.slice(0, 20)) expect(id).toMatch(/^ro_[0-9a-z]{22}$/);
  });

  it('rollout keys carry 32 random bytes in base64url behind hrk_', () => {
    const key = newKey();
    expect(key).toMatch(/^hrk_[A-Za-z0-9_-]{43}$/);
    expect(Buffer.from(key.slice(4), 'base64url').byteLength).toBe(32);
    expect(newKey()).not.toBe(key);
  });
});
