// The daemon's heap over a long run (issue #32): finished agent rollouts must leave nothing behind.
// fake-vllm and the proxy (servers/memory.ts, bundled like the daemon, --expose-gc, a real SQLite
// store) run in their own child processes; this process is the harnesses: BENCH_CONCURRENCY (16)
// agents, each taking a rollout, making its BENCH_TURNS (2) calls with a BENCH_PROMPT_KB (48) KB
// system prompt (the second resends the history: bridged), then completing it, BENCH_ROLLOUTS
// (20,000) rollouts in all.
//   memory.rollouts  the proxy's heap after full collections once BENCH_WARMUP (500) rollouts are
//                    done (start), at the middle and at the end; bytes_per_rollout =
//                    (end - start) / rollouts since the start; what the per-rollout caches hold at the
//                    end (nothing: every rollout finished)
// BENCH_CHECKOUT=dir measures another checkout's proxy (copy servers/memory.ts into its bench/): the
// figures of a parent commit, on the same machine.
import { rmSync } from 'node:fs';
import { Agent } from 'node:http';
import { DAEMON_NODE_FLAGS } from '../daemon/cli/node-flags';
import { postJson } from './client';
import { bundledChild, child, emit, root, round } from './emit';

const FAKE = `
import { startFakeVllm } from '${root}test/fixtures/fake-vllm.ts';
const f = await startFakeVllm({ model: 'toy', maxModelLen: 1 << 22, maxProduced: 16 });
process.stdout.write(JSON.stringify({ url: f.url }) + '\\n');
`;

const env = (name: string, fallback: number) => Number(process.env[name] ?? fallback);

/** The settings, from the environment (see the header). */
const settingsOf = () => {
  const rollouts = env('BENCH_ROLLOUTS', 20_000);
  return {
    rollouts,
    warmup: Math.min(env('BENCH_WARMUP', 500), Math.floor(rollouts / 4)),
    concurrency: env('BENCH_CONCURRENCY', 16),
    turns: env('BENCH_TURNS', 2),
    promptKb: env('BENCH_PROMPT_KB', 48),
    progress: env('BENCH_PROGRESS', 0),
  };
};
type Settings = ReturnType<typeof settingsOf>;

interface Heap {
  heap_used: number;
  held: Record<string, unknown> | null;
  chains: Record<string, number> | null;
}
/** The proxy's heap after full collections, and what its per-rollout caches hold. */
const heapOf = async (origin: string) => (await (await fetch(`${origin}/bench/heap`)).json()) as Heap;

/**
 * The harnesses: `upTo(limit)` runs rollouts, `concurrency` at a time, until `limit` are done in all
 * (counting on from the last call), then takes the heap with nothing in flight.
 */
function harnesses(origin: string, agent: Agent, s: Settings) {
  const system = 'You are a careful coding agent. Read the task, use the tools, answer briefly. '.repeat(
    Math.ceil((s.promptKb * 1024) / 78),
  );
  /** One agent rollout: its turns, each resending the history, then the harness completes it. */
  const rollout = async (n: number) => {
    const r = (await postJson(agent, `${origin}/bench/rollout`, '', {})) as { id: string; key: string };
    const messages: object[] = [
      { role: 'system', content: `${system.slice(0, s.promptKb * 1024 - 32)} (task ${n})` },
      { role: 'user', content: `Task ${n}: fix the failing test.` },
    ];
    for (let t = 0; t < s.turns; t++) {
      const answer = await postJson(agent, `${origin}/r/${r.id}/v1/chat/completions`, r.key, {
        model: 'toy',
        messages,
        max_tokens: 32,
      });
      messages.push(answer.choices[0].message, { role: 'user', content: `tool result ${t}: ok ${n}` });
    }
    await postJson(agent, `${origin}/bench/end?id=${r.id}`, '', {});
  };
  let next = 0;
  return async (limit: number) => {
    const worker = async () => {
      while (next < limit) {
        const n = next++;
        await rollout(n);
        // BENCH_PROGRESS=k: the heap (with calls in flight) every k rollouts, on stderr.
        if (s.progress > 0 && (n + 1) % s.progress === 0)
          process.stderr.write(
            `memory: ${n + 1} rollouts, heap ${((await heapOf(origin)).heap_used / 2 ** 20).toFixed(1)} MB\n`,
          );
      }
    };
    await Promise.all(Array.from({ length: s.concurrency }, worker));
    return heapOf(origin);
  };
}

export default async function memory(): Promise<void> {
  const s = settingsOf();
  const fake = await child(FAKE);
  const server = await bundledChild(
    'servers/memory.ts',
    { BACKEND: fake.info.url },
    [...DAEMON_NODE_FLAGS, '--expose-gc'],
    process.env.BENCH_CHECKOUT ?? root,
  );
  const origin = server.info.origin;
  const agent = new Agent({ keepAlive: true, maxSockets: s.concurrency * 2 });
  const upTo = harnesses(origin, agent, s);
  const t0 = performance.now();
  const start = (await upTo(s.warmup)).heap_used;
  const middle = (await upTo(Math.floor((s.warmup + s.rollouts) / 2))).heap_used;
  const end = await upTo(s.rollouts);
  const seconds = (performance.now() - t0) / 1000;
  const mb = (b: number) => round(b / (1024 * 1024), 1);
  emit('memory.rollouts', {
    rollouts: s.rollouts,
    prompt_kb: s.promptKb,
    turns: s.turns,
    concurrency: s.concurrency,
    heap_mb_start: mb(start),
    heap_mb_middle: mb(middle),
    heap_mb_end: mb(end.heap_used),
    bytes_per_rollout: Math.round((end.heap_used - start) / (s.rollouts - s.warmup)),
    held_at_end: JSON.stringify({ ...(end.held ?? {}), chains: end.chains }),
    rollouts_per_s: round(s.rollouts / seconds, 1),
  });
  agent.destroy();
  server.proc.kill('SIGINT');
  fake.proc.kill();
  await new Promise((r) => server.proc.once('exit', r));
  rmSync(String(server.info.data_dir), { recursive: true, force: true });
}
