// The daemon's REST API as the tests call it, and the smallest evolutions to start through it.
import { copyFileSync, cpSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ctx, root, waitFor } from './harness.mjs';

export async function api(method, path, body) {
  const token = readFileSync(join(ctx.data, 'token'), 'utf8').trim();
  const res = await fetch(`http://127.0.0.1:${ctx.daemonPort}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const json = await res.json().catch(() => null);
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
  return json;
}

// A copy of examples/evolve in the workspace folder `dirName` (its tasks beside it) and the smallest
// evolution of it: one generation, one proposal by `proposer`, one finalist, one attempt, no critic or
// pruner; `tasks`: the tasks block's limit and held-out fraction.
export function tinyEvolveConfig(name, dirName, proposer, tasks) {
  const dir = join(ctx.ws, dirName);
  cpSync(join(root, 'examples', 'evolve'), dir, { recursive: true });
  copyFileSync(join(root, 'examples/math-agent/tasks.jsonl'), join(dir, 'tasks.jsonl'));
  const config = {
    name,
    tasks: { file: 'tasks.jsonl', ...tasks },
    harness: {
      command: ['node', 'agent.mjs'],
      dir: 'harness',
      concurrency: 4,
      timeout_s: 60,
      max_attempts: 1,
      reward: 'verifier',
      verifier: ['node', 'verify.mjs'],
    },
    algorithm: { max_response_tokens: 4 },
    evolve: {
      proposer,
      generations: 1,
      children: 1,
      finalists: 1,
      attempts: 1,
      critic: false,
      pruner: false,
    },
  };
  return { dir, config };
}

// An evolution once it is neither running nor interrupted.
export function evolutionEnd(id, timeoutMs = 180_000) {
  return waitFor(
    `evolution ${id} to end`,
    async () => {
      const e = await api('GET', `/api/evolutions/${id}`);
      return e.status === 'interrupted' || e.status === 'running' ? null : e;
    },
    timeoutMs,
  );
}
