// GPU health comes from nvidia-smi's CSV where it exists (here: a stand-in script on PATH).
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { gpuHealth } from './gpu';

const dir = mkdtempSync(join(tmpdir(), 'harness-rl-gpu-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('gpu health', () => {
  it("reads index, name, memory and utilisation of each GPU from nvidia-smi's CSV", () => {
    const script = join(dir, 'nvidia-smi');
    writeFileSync(
      script,
      '#!/bin/sh\nprintf "0, NVIDIA H200, 1024, 143771, 37\\n1, NVIDIA H200, 0, 143771, 0\\n"\n',
    );
    chmodSync(script, 0o755);
    const path = process.env.PATH;
    process.env.PATH = `${dir}:${path}`;
    try {
      expect(gpuHealth()).toEqual([
        { index: 0, name: 'NVIDIA H200', memory_used_mb: 1024, memory_total_mb: 143771, utilization: 37 },
        { index: 1, name: 'NVIDIA H200', memory_used_mb: 0, memory_total_mb: 143771, utilization: 0 },
      ]);
    } finally {
      process.env.PATH = path;
    }
  });
});
