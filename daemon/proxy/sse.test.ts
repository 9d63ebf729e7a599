import { describe, expect, it } from 'vitest';
import { SseParser } from './sse';

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
});
