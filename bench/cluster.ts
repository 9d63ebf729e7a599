// The GPU path on loopback: a daemon whose runs sample through node agents (`harness-rl node --role
// inference --vllm-url …`) in front of fake-vllm, against runs whose endpoint is the same fake-vllm
// URL. The backends, the node agents and the daemon each run in their own child process
// (cluster/parts.ts); this process is the harness side, calling rollout-scoped URLs with rollout keys
// as harnesses do (cluster/drive.ts). The phases, each explained where it is measured:
//   cluster.tunnel  cluster/tunnel.ts: one node against its backend directly
//   cluster.scale   cluster/scale.ts: 4 nodes, 512 concurrent rollouts
// BENCH_ONLY=tunnel,scale runs a subset, BENCH_SECONDS (4) a measurement, BENCH_N (300) the calls
// timed to first token, BENCH_PROFILE=dir profiles the daemon and the node agents.
// Recording is on (the daemon's SQLite store), as in any run.
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { agent } from './cluster/drive';
import { startParts, stopAll } from './cluster/parts';
import { scale } from './cluster/scale';
import { tunnel } from './cluster/tunnel';

export default async function main(): Promise<void> {
  const only = (process.env.BENCH_ONLY ?? 'tunnel,scale').split(',');
  const seconds = Number(process.env.BENCH_SECONDS ?? 4) * 1000;
  const nodeToken = `node_${randomBytes(8).toString('hex')}`;
  const dir = mkdtempSync(join(tmpdir(), 'harness-rl-bench-cluster-'));
  writeFileSync(
    join(dir, 'tasks.jsonl'),
    Array.from({ length: 256 }, (_, i) => `${JSON.stringify({ prompt: `task ${i}` })}\n`).join(''),
  );
  const started: ChildProcess[] = [];
  try {
    const parts = await startParts(dir, only.includes('scale') ? 4 : 1, nodeToken, started);
    const c = { ...parts, dir, nodeToken, seconds };
    if (only.includes('tunnel')) await tunnel(c);
    if (only.includes('scale')) await scale(c);
  } finally {
    await stopAll(started);
    agent.destroy();
    rmSync(dir, { recursive: true, force: true });
  }
}
