// Binary frames of the node protocol. One frame = u32le header length, the header (JSON, UTF-8,
// space-padded so the payload starts 8-byte aligned within the frame), then the payload bytes.
// Over a WebSocket a frame is one binary message; over stdio (node agent ⇄ trainer process) each
// frame is preceded by its total length as u32le.
import { z } from 'zod';
import { NodeMessage, type PackedSamples } from './node';
import type { Sample } from './training';

export interface Frame {
  header: NodeMessage;
  payload: Buffer;
}

export class FrameError extends Error {}

const EMPTY = Buffer.alloc(0);

export function encodeFrame(header: NodeMessage, payload: Uint8Array = EMPTY): Buffer {
  const json = Buffer.from(JSON.stringify(header), 'utf8');
  const padded = Math.ceil((4 + json.length) / 8) * 8 - 4;
  const out = Buffer.allocUnsafe(4 + padded + payload.byteLength);
  out.writeUInt32LE(padded, 0);
  json.copy(out, 4);
  out.fill(0x20, 4 + json.length, 4 + padded);
  out.set(payload, 4 + padded);
  return out;
}

/** Decodes and validates one frame; throws FrameError naming what is wrong. */
export function decodeFrame(data: Buffer): Frame {
  if (data.length < 4) throw new FrameError(`frame of ${data.length} bytes is shorter than its length field`);
  const len = data.readUInt32LE(0);
  if (4 + len > data.length)
    throw new FrameError(`frame header length ${len} exceeds the frame (${data.length} bytes)`);
  let raw: unknown;
  try {
    raw = JSON.parse(data.toString('utf8', 4, 4 + len));
  } catch (err) {
    throw new FrameError(`frame header is not JSON: ${(err as Error).message}`);
  }
  const parsed = NodeMessage.safeParse(raw);
  if (!parsed.success) {
    const t = (raw as { t?: unknown } | null)?.t;
    throw new FrameError(
      `bad ${typeof t === 'string' ? `"${t}" ` : ''}message: ${z.prettifyError(parsed.error)}`,
    );
  }
  return { header: parsed.data, payload: data.subarray(4 + len) };
}

/** Splits a byte stream of u32le-length-prefixed frames (stdio); calls `onFrame` per whole frame. */
export class FrameReader {
  private buf: Buffer = EMPTY;
  constructor(
    private readonly onFrame: (frame: Buffer) => void,
    private readonly maxBytes = 1 << 30,
  ) {}

  push(chunk: Buffer): void {
    this.buf = this.buf.length === 0 ? chunk : Buffer.concat([this.buf, chunk]);
    while (this.buf.length >= 4) {
      const len = this.buf.readUInt32LE(0);
      if (len > this.maxBytes)
        throw new FrameError(`frame of ${len} bytes exceeds the limit of ${this.maxBytes}`);
      if (this.buf.length < 4 + len) return;
      const frame = this.buf.subarray(4, 4 + len);
      this.buf = this.buf.subarray(4 + len);
      this.onFrame(frame);
    }
  }
}

/** A frame with its stdio length prefix. */
export function lengthPrefixed(frame: Buffer): Buffer[] {
  const len = Buffer.allocUnsafe(4);
  len.writeUInt32LE(frame.length, 0);
  return [len, frame];
}

/** Samples → the PackedSamples header part and the payload (column layout: see node.ts). */
export function packSamples(samples: readonly Sample[]): { meta: PackedSamples; payload: Buffer } {
  const lengths = samples.map((s) => s.input_ids.length);
  const n = lengths.reduce((a, b) => a + b, 0);
  const payload = Buffer.alloc(n * (8 + 8 + 4 + 4 + 1));
  const f64a = new Float64Array(payload.buffer, payload.byteOffset, n);
  const f64b = new Float64Array(payload.buffer, payload.byteOffset + 8 * n, n);
  const i32 = new Int32Array(payload.buffer, payload.byteOffset + 16 * n, n);
  const f32 = new Float32Array(payload.buffer, payload.byteOffset + 20 * n, n);
  const u8 = new Uint8Array(payload.buffer, payload.byteOffset + 24 * n, n);
  let at = 0;
  samples.forEach((s, i) => {
    const len = lengths[i];
    for (const [name, arr] of [
      ['loss_mask', s.loss_mask],
      ['advantages', s.advantages],
      ['old_logprobs', s.old_logprobs],
      ['loss_weights', s.loss_weights],
    ] as const) {
      if (arr.length !== len)
        throw new FrameError(
          `sample ${i} (${s.rollout_id}): ${name} has ${arr.length} tokens, input_ids ${len}`,
        );
    }
    f64a.set(s.old_logprobs, at);
    f64b.set(s.loss_weights, at);
    i32.set(s.input_ids, at);
    f32.set(s.advantages, at);
    u8.set(s.loss_mask, at);
    at += len;
  });
  return {
    meta: {
      rollout_ids: samples.map((s) => s.rollout_id),
      group_ids: samples.map((s) => s.group_id),
      indexes: samples.map((s) => s.index),
      lengths,
      ...(samples.some((s) => s.temperature !== undefined)
        ? { temperatures: samples.map((s) => s.temperature ?? 1) }
        : {}),
    },
    payload,
  };
}

/** The inverse of packSamples; throws FrameError when the payload does not match the lengths. */
export function unpackSamples(meta: PackedSamples, payload: Buffer): Sample[] {
  const count = meta.lengths.length;
  if (meta.rollout_ids.length !== count || meta.group_ids.length !== count || meta.indexes.length !== count)
    throw new FrameError(
      `samples: rollout_ids, group_ids, indexes and lengths differ in length (${meta.rollout_ids.length}, ${meta.group_ids.length}, ${meta.indexes.length}, ${count})`,
    );
  if (meta.temperatures && meta.temperatures.length !== count)
    throw new FrameError(
      `samples: temperatures has ${meta.temperatures.length} entries, lengths has ${count}`,
    );
  const n = meta.lengths.reduce((a, b) => a + b, 0);
  if (payload.length !== n * 25)
    throw new FrameError(
      `samples: payload has ${payload.length} bytes, the lengths say ${n} tokens (${n * 25} bytes)`,
    );
  // Copy into an aligned buffer: a frame's payload need not start at an aligned address.
  const own = new Uint8Array(payload.length);
  own.set(payload);
  const buf = own.buffer;
  const f64a = new Float64Array(buf, 0, n);
  const f64b = new Float64Array(buf, 8 * n, n);
  const i32 = new Int32Array(buf, 16 * n, n);
  const f32 = new Float32Array(buf, 20 * n, n);
  const u8 = new Uint8Array(buf, 24 * n, n);
  const out: Sample[] = [];
  let at = 0;
  for (let i = 0; i < count; i++) {
    const len = meta.lengths[i];
    out.push({
      rollout_id: meta.rollout_ids[i],
      group_id: meta.group_ids[i],
      index: meta.indexes[i],
      old_logprobs: f64a.subarray(at, at + len),
      loss_weights: f64b.subarray(at, at + len),
      input_ids: i32.subarray(at, at + len),
      advantages: f32.subarray(at, at + len),
      loss_mask: u8.subarray(at, at + len),
      ...(meta.temperatures ? { temperature: meta.temperatures[i] } : {}),
    });
    at += len;
  }
  return out;
}
