// The node protocol's frames: what the daemon, node agents and the Python trainer exchange.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { nodeProtocolJsonSchema } from '../cli/commands/schema';
import {
  decodeFrame,
  encodeFrame,
  FrameError,
  FrameReader,
  lengthPrefixed,
  packSamples,
  unpackSamples,
} from './frames';
import type { Sample } from './training';

const sample = (n: number, seed: number): Sample => ({
  rollout_id: `r${seed}`,
  group_id: `g${seed % 3}`,
  index: seed % 2,
  input_ids: Int32Array.from({ length: n }, (_, i) => (i * 7 + seed) % 151_000),
  loss_mask: Uint8Array.from({ length: n }, (_, i) => (i > n / 2 ? 1 : 0)),
  advantages: Float32Array.from({ length: n }, (_, i) => (i > n / 2 ? (seed % 5) - 2 : 0)),
  old_logprobs: Float64Array.from({ length: n }, (_, i) => (i > n / 2 ? -i / 10 : Number.NaN)),
  loss_weights: Float64Array.from({ length: n }, (_, i) => (i > n / 2 ? 1 / n : 0)),
});

describe('node protocol frames', () => {
  it('a header and payload survive encoding, with the payload 8-byte aligned in the frame', () => {
    for (const id of ['a', 'ab', 'abc', 'abcdefgh']) {
      const payload = Buffer.from([1, 2, 3]);
      const frame = encodeFrame({ t: 'http_data', id }, payload);
      const headerLength = frame.readUInt32LE(0);
      expect((4 + headerLength) % 8).toBe(0);
      const decoded = decodeFrame(frame);
      expect(decoded.header).toEqual({ t: 'http_data', id });
      expect([...decoded.payload]).toEqual([1, 2, 3]);
    }
  });

  it('packed samples come back bit for bit, NaN logprobs included', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 1, max: 40 }), { minLength: 1, maxLength: 6 }), (lengths) => {
        const samples = lengths.map((n, i) => sample(n, i));
        const { meta, payload } = packSamples(samples);
        const frame = decodeFrame(
          encodeFrame(
            {
              t: 'train',
              id: 'x',
              key: 'run:0',
              run_id: 'run',
              step: 0,
              model_version: 0,
              loss: { clip_low: 0.2, clip_high: 0.28, tis_cap: 2, kl_coef: 0, learning_rate: 1e-6 },
              samples: meta,
            },
            payload,
          ),
        );
        if (frame.header.t !== 'train') throw new Error('wrong type');
        const back = unpackSamples(frame.header.samples, frame.payload);
        expect(back.map((s) => [...s.input_ids])).toEqual(samples.map((s) => [...s.input_ids]));
        expect(back.map((s) => [...s.loss_mask])).toEqual(samples.map((s) => [...s.loss_mask]));
        expect(back.map((s) => [...s.advantages])).toEqual(samples.map((s) => [...s.advantages]));
        expect(back.map((s) => [...s.old_logprobs])).toEqual(samples.map((s) => [...s.old_logprobs]));
        expect(back.map((s) => [...s.loss_weights])).toEqual(samples.map((s) => [...s.loss_weights]));
        expect(back.map((s) => [s.rollout_id, s.group_id, s.index])).toEqual(
          samples.map((s) => [s.rollout_id, s.group_id, s.index]),
        );
        expect(back.every((s) => s.temperature === undefined)).toBe(true);
      }),
      { numRuns: 50 },
    );
  });

  it("a sample's sampling temperature travels to the trainer (absent ones as 1)", () => {
    const samples = [{ ...sample(4, 1), temperature: 0.6 }, sample(3, 2)];
    const { meta, payload } = packSamples(samples);
    expect(meta.temperatures).toEqual([0.6, 1]);
    expect(unpackSamples(meta, payload).map((s) => s.temperature)).toEqual([0.6, 1]);
    expect(() => unpackSamples({ ...meta, temperatures: [0.6] }, payload)).toThrow(
      /temperatures has 1 entries/,
    );
  });

  it('bad frames are refused with what is wrong', () => {
    expect(() => decodeFrame(Buffer.from([1, 0]))).toThrow(/shorter than its length field/);
    const notJson = Buffer.concat([Buffer.from([3, 0, 0, 0]), Buffer.from('{no')]);
    expect(() => decodeFrame(notJson)).toThrow(/not JSON/);
    const wrong = Buffer.from(
      JSON.stringify({ t: 'http', id: 'a', method: 'PUT', path: '/x', deadline_ms: 5 }),
    );
    const frame = Buffer.concat([Buffer.alloc(4), wrong]);
    frame.writeUInt32LE(wrong.length, 0);
    expect(() => decodeFrame(frame)).toThrow(FrameError);
    expect(() => decodeFrame(frame)).toThrow(/"http" message: .*method/s);
    const meta = { rollout_ids: ['a'], group_ids: ['g'], indexes: [0], lengths: [4] };
    expect(() => unpackSamples(meta, Buffer.alloc(10))).toThrow(
      /payload has 10 bytes, the lengths say 4 tokens/,
    );
    const short = { ...sample(4, 1), loss_weights: new Float64Array(3) };
    expect(() => packSamples([short])).toThrow(/loss_weights has 3 tokens, input_ids 4/);
  });

  it('a stdio stream split anywhere yields the same frames', () => {
    const frames = [
      encodeFrame({ t: 'ok', id: '1' }),
      encodeFrame({ t: 'http_end', id: '2' }, Buffer.alloc(100, 7)),
    ];
    const stream = Buffer.concat(frames.flatMap((f) => lengthPrefixed(f)));
    for (const cut of [1, 3, 5, 17, stream.length - 1]) {
      const got: string[] = [];
      const reader = new FrameReader((f) => got.push(JSON.stringify(decodeFrame(f).header)));
      reader.push(stream.subarray(0, cut));
      reader.push(stream.subarray(cut));
      expect(got).toEqual(['{"t":"ok","id":"1"}', '{"t":"http_end","id":"2"}']);
    }
  });

  it('the Python trainer validates against the JSON Schema generated from these schemas (run `npx tsx daemon/cli/main.ts schema --node > trainer/harness_rl_trainer/protocol.schema.json` after changing node.ts)', () => {
    const committed = JSON.parse(
      readFileSync(
        fileURLToPath(new URL('../../trainer/harness_rl_trainer/protocol.schema.json', import.meta.url)),
        'utf8',
      ),
    );
    expect(committed).toEqual(nodeProtocolJsonSchema());
  });
});
