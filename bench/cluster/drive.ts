// The cluster bench's harness side: runs started through the daemon's API and their rollouts claimed
// as workers do, calls on their rollout-scoped URLs with rollout keys, and the CPU each part used.
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { Agent } from 'node:http';
import { chat, post, type Target } from '../client';
import { cpuOf } from '../emit';

export const agent = new Agent({ keepAlive: true, maxSockets: Number.POSITIVE_INFINITY });

const call = (t: Target, body: object) => post(agent, `${t.base}/chat/completions`, t.key, body);

/** A daemon REST call with its token. */
export async function api<T>(
  daemon: Record<string, string>,
  method: string,
  path: string,
  body?: unknown,
): Promise<T> {
  const res = await fetch(`${daemon.url}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${daemon.token}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (res.status >= 300) throw new Error(`${method} ${path}: HTTP ${res.status} ${text.slice(0, 300)}`);
  return (text ? JSON.parse(text) : null) as T;
}

/**
 * Starts a run on `endpoints` (trainer: reference, never reached: no rollout finishes) and claims
 * `rollouts` of its rollouts as workers do; resolves with their scoped base URLs and keys.
 */
export async function runWith(
  daemon: Record<string, string>,
  dir: string,
  endpoints: string[],
  token: string,
  rollouts: number,
): Promise<{ id: string; targets: Target[] }> {
  const run = await api<{ id: string }>(daemon, 'POST', '/api/runs', {
    base_dir: dir,
    config: {
      name: `bench-${randomBytes(3).toString('hex')}`,
      model: { name: 'toy' },
      inference: { endpoints, token },
      trainer: { endpoint: 'reference' },
      tasks: { file: 'tasks.jsonl', limit: rollouts / 2 },
      harness: { concurrency: rollouts, timeout_s: 3600, max_attempts: 1 },
      algorithm: { n: 2, max_response_tokens: 4096 },
      schedule: { steps: 1, groups_per_step: rollouts / 2 },
    },
  });
  const targets: Target[] = [];
  while (targets.length < rollouts) {
    const claims = await Promise.all(
      Array.from({ length: Math.min(32, rollouts - targets.length) }, () =>
        fetch(`${daemon.url}/api/runs/${run.id}/claim`, {
          method: 'POST',
          headers: { authorization: `Bearer ${daemon.token}`, 'content-type': 'application/json' },
          body: JSON.stringify({ worker: 'bench', wait_ms: 5000 }),
        }).then(async (r) =>
          r.status === 200 ? ((await r.json()) as { openai_base_url: string; key: string }) : null,
        ),
      ),
    );
    for (const c of claims) if (c) targets.push({ base: c.openai_base_url, key: c.key });
  }
  return { id: run.id, targets };
}

/** Calls from `loops` concurrent loops (loop i on target i mod n) for `ms`; calls/s and tokens/s. */
export async function load(targets: Target[], loops: number, ms: number, body: object) {
  let calls = 0;
  let tokens = 0;
  let failed = 0;
  let lastError = '';
  const t0 = performance.now();
  const end = t0 + ms;
  await Promise.all(
    Array.from({ length: loops }, async (_, i) => {
      const t = targets[i % targets.length];
      while (performance.now() < end) {
        try {
          tokens += (await call(t, body)).tokens;
          calls++;
        } catch (err) {
          failed++;
          lastError = (err as Error).message;
        }
      }
    }),
  );
  const s = (performance.now() - t0) / 1000;
  if (failed > 0) process.stderr.write(`cluster bench: ${failed} calls failed, last: ${lastError}\n`);
  return { callsPerS: calls / s, tokensPerS: tokens / s, failed, seconds: s };
}

/** Sequential streamed calls alternating between the targets; time to first token of each. */
export async function ttft(targets: Target[], n: number): Promise<number[][]> {
  const out: number[][] = targets.map(() => []);
  for (let i = 0; i < n; i++)
    for (const [k, t] of targets.entries())
      out[k].push((await call(t, chat('ttft please', { stream: true }))).firstMs);
  return out;
}

/** CPU time (µs) each process (and this one, `client`) used since the meter started. */
export function cpuMeter(procs: Record<string, ChildProcess>) {
  const start = Object.fromEntries(Object.entries(procs).map(([k, p]) => [k, cpuOf(p)]));
  const self = process.cpuUsage();
  return (): Record<string, number> => {
    const mine = process.cpuUsage(self);
    const used: Record<string, number> = {};
    for (const [k, p] of Object.entries(procs)) used[k] = cpuOf(p) - start[k];
    used.client = mine.user + mine.system;
    return used;
  };
}
