// What one rollout of the math example costs its worker, by how its harness starts: spawned per rollout
// with `npx tsx main.ts` (the examples' old command), spawned with `node --import tsx main.ts`, and
// persistent (`harness.mode: persistent`: one `node --import tsx main.ts` per slot taking rollouts from
// stdin). The harness is the real examples/math-agent (two chat calls through the official OpenAI
// client) against a stub chat endpoint in this process, so the figures are the harness's own cost.
//   harness.modes  rollouts/s and CPU ms per rollout (the harness processes, reaped, from /proc) per mode
// ROLLOUTS (default 24) rollouts per mode, CONCURRENCY (default 4) at a time.
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { RolloutContext, RolloutOutcome } from '../daemon/protocol/worker';
import { commandRollout } from '../daemon/worker/command';
import { PersistentHarness } from '../daemon/worker/persistent';
import { emit, root, round } from './emit';

const TICK_MS = 10; // USER_HZ 100

/** CPU ms of this process's reaped children (cutime + cstime), from /proc (Linux). */
function childrenCpuMs(): number {
  const stat = readFileSync('/proc/self/stat', 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[13]) + Number(fields[14])) * TICK_MS;
}

/** A chat endpoint that answers every call with "7" and the end of the turn. */
async function stubChat(): Promise<{ url: string; close(): void; connections(): number }> {
  let connections = 0;
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          id: 'c',
          object: 'chat.completion',
          created: 0,
          model: 'reference',
          choices: [{ index: 0, message: { role: 'assistant', content: '7' }, finish_reason: 'stop' }],
        }),
      );
    });
  });
  server.on('connection', () => connections++);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    close: () => server.close(),
    connections: () => connections,
  };
}

function contextOf(i: number, base: string): RolloutContext {
  const t = new Date().toISOString();
  const id = `ro_bench${i}`;
  return {
    rollout: {
      id,
      kind: 'run',
      run_id: 'run_bench',
      group_id: null,
      task_id: null,
      recording_id: null,
      input: null,
      status: 'running',
      attempt_count: 1,
      max_attempts: 1,
      reward: null,
      error: null,
      stats: null,
      created_at: t,
      updated_at: t,
      started_at: t,
      finished_at: null,
    },
    attempt: {
      id: `att_bench${i}`,
      rollout_id: id,
      index: 1,
      status: 'running',
      worker: 'bench',
      error: null,
      started_at: t,
      heartbeat_at: t,
      finished_at: null,
    },
    key: 'none',
    openai_base_url: base,
    anthropic_base_url: base,
    input: { id: `t${i}`, a: 3, b: 4, op: '+', answer: 7 },
    model: 'reference',
    timeout_s: 120,
    heartbeat_s: 10,
    signal: new AbortController().signal,
    daemonUrl: 'http://127.0.0.1:1',
  };
}

/** `rollouts` rollouts, `concurrency` at a time: rollouts/s, CPU ms per rollout, connections per rollout. */
async function measure(
  rollout: (ctx: RolloutContext) => Promise<RolloutOutcome>,
  rollouts: number,
  concurrency: number,
  done: () => Promise<void> = async () => {},
) {
  const stub = await stubChat();
  const cpu0 = childrenCpuMs();
  const t0 = performance.now();
  let next = 0;
  const slot = async () => {
    while (next < rollouts) {
      const out = await rollout(contextOf(next++, stub.url));
      if (typeof out.reward !== 'number') throw new Error(`no reward: ${out.stdout}`);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, slot));
  const seconds = (performance.now() - t0) / 1000;
  await done(); // persistent processes are reaped here, so their CPU counts
  const cpuMs = childrenCpuMs() - cpu0;
  stub.close();
  return {
    rollouts_per_s: round(rollouts / seconds, 2),
    cpu_ms_per_rollout: round(cpuMs / rollouts, 1),
    connections_per_rollout: round(stub.connections() / rollouts, 2),
  };
}

export default async function main(): Promise<void> {
  const rollouts = Number(process.env.ROLLOUTS ?? 24);
  const concurrency = Number(process.env.CONCURRENCY ?? 4);
  const cwd = join(root, 'examples', 'math-agent');
  const npx = await measure(commandRollout(['npx', 'tsx', 'main.ts'], { cwd }), rollouts, concurrency);
  const node = await measure(
    commandRollout([process.execPath, '--import', 'tsx', 'main.ts'], { cwd }),
    rollouts,
    concurrency,
  );
  const harness = new PersistentHarness([process.execPath, '--import', 'tsx', 'main.ts'], { cwd });
  const persistent = await measure(
    (ctx) => harness.rollout(ctx),
    rollouts,
    concurrency,
    () => harness.close(),
  );
  const prefixed = (prefix: string, figures: Record<string, number>) =>
    Object.fromEntries(Object.entries(figures).map(([k, v]) => [`${prefix}_${k}`, v]));
  emit('harness.modes', {
    rollouts,
    concurrency,
    ...prefixed('spawned_npx', npx),
    ...prefixed('spawned', node),
    ...prefixed('persistent', persistent),
    persistent_processes: harness.started,
    persistent_speedup: round(persistent.rollouts_per_s / npx.rollouts_per_s, 1),
  });
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
