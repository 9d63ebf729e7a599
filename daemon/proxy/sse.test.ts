import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SseParser, Utf8Decoder } from './sse';

const parseAll = (text: string, step: number) => {
  const p = new SseParser();
  const bytes = new TextEncoder().encode(text);
  const out = [];
  for (let i = 0; i < bytes.length; i += step) out.push(...p.push(bytes.subarray(i, i + step)));
  out.push(...p.flush());
  return out;
};

describe('SseParser', () => {
  const lf = 'data: {"a":"é😀"}\n\nevent: ping\ndata: x\ndata: y\n\n: comment\n\ndata:[DONE]\n\n';
  it('yields the same events however the bytes are split (LF, multi-byte characters)', () => {
    const want = [
      { event: null, data: '{"a":"é😀"}' },
      { event: 'ping', data: 'x\ny' },
      { event: null, data: '[DONE]' },
    ];
    for (const step of [1, 2, 3, 7, 1000]) expect(parseAll(lf, step)).toEqual(want);
  });
  it('understands CRLF line ends, even when they appear only later in the stream', () => {
    const text = 'data: 1\n\ndata: 2\r\n\r\nevent: e\r\ndata: 3\r\n\r\ndata: 4';
    const want = [
      { event: null, data: '1' },
      { event: null, data: '2' },
      { event: 'e', data: '3' },
      { event: null, data: '4' },
    ];
    for (const step of [1, 5, 1000]) expect(parseAll(text, step)).toEqual(want);
  });
  it('decodes any bytes split anywhere as one TextDecoder does (BOM, split and invalid UTF-8)', () => {
    const piece = fc.oneof(
      fc.constantFrom('data: {"a":"x"}\n\n', 'data: é😀\n\n', '\n\n', 'x', '\r\n'),
      fc.string({ unit: 'binary', maxLength: 4 }),
    );
    const bytes = fc.oneof(
      piece.map((t) => [...Buffer.from(t)]),
      fc.constantFrom([0xef, 0xbb, 0xbf], [0xe2, 0x82], [0x80], [0xff], [0xf0, 0x9f, 0x98]),
    );
    fc.assert(
      fc.property(
        fc.array(bytes, { maxLength: 12 }),
        fc.array(fc.nat(40), { maxLength: 8 }),
        (parts, cuts) => {
          const all = Uint8Array.from(parts.flat());
          const d = new Utf8Decoder();
          let got = '';
          let at = 0;
          for (const c of [...cuts, all.length]) {
            const to = Math.min(all.length, at + c);
            got += d.decode(Buffer.from(all.subarray(at, to)));
            at = to;
          }
          expect(got + d.end()).toBe(new TextDecoder().decode(all));
        },
      ),
      { numRuns: 3000 },
    );
  });
});
