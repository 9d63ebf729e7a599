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

export default async function memory(): Promise<void> {
  const rollouts = env('BENCH_ROLLOUTS', 20_000);
  const warmup = Math.min(env('BENCH_WARMUP', 500), Math.floor(rollouts / 4));
  const concurrency = env('BENCH_CONCURRENCY', 16);
  const turns = env('BENCH_TURNS', 2);
  const promptKb = env('BENCH_PROMPT_KB', 48);
  const progress = env('BENCH_PROGRESS', 0);
  const fake = await child(FAKE);
  const server = await bundledChild(
    'servers/memory.ts',
    { BACKEND: fake.info.url },
    [...DAEMON_NODE_FLAGS, '--expose-gc'],
    process.env.BENCH_CHECKOUT ?? root,
  );
  const origin = server.info.origin;
  const agent = new Agent({ keepAlive: true, maxSockets: concurrency * 2 });
  const system = 'You are a careful coding agent. Read the task, use the tools, answer briefly. '.repeat(
    Math.ceil((promptKb * 1024) / 78),
  );
  const heap = async () =>
    (await (await fetch(`${origin}/bench/heap`)).json()) as {
      heap_used: number;
      held: Record<string, unknown> | null;
      chains: Record<string, number> | null;
    };

  /** One agent rollout: its turns, each resending the history, then the harness completes it. */
  const rollout = async (n: number) => {
    const r = (await postJson(agent, `${origin}/bench/rollout`, '', {})) as { id: string; key: string };
    const messages: object[] = [
      { role: 'system', content: `${system.slice(0, promptKb * 1024 - 32)} (task ${n})` },
      { role: 'user', content: `Task ${n}: fix the failing test.` },
    ];
    for (let t = 0; t < turns; t++) {
      const answer = await postJson(agent, `${origin}/r/${r.id}/v1/chat/completions`, r.key, {
        model: 'toy',
        messages,
        max_tokens: 32,
      });
      messages.push(answer.choices[0].message, { role: 'user', content: `tool result ${t}: ok ${n}` });
    }
    await postJson(agent, `${origin}/bench/end?id=${r.id}`, '', {});
  };

  const t0 = performance.now();
  let next = 0;
  /** Rollouts until `limit` are done, `concurrency` at a time; then the heap, with nothing in flight. */
  const upTo = async (limit: number) => {
    const worker = async () => {
      while (next < limit) {
        const n = next++;
        await rollout(n);
        // BENCH_PROGRESS=k: the heap (with calls in flight) every k rollouts, on stderr.
        if (progress > 0 && (n + 1) % progress === 0)
          process.stderr.write(
            `memory: ${n + 1} rollouts, heap ${((await heap()).heap_used / 2 ** 20).toFixed(1)} MB\n`,
          );
      }
    };
    await Promise.all(Array.from({ length: concurrency }, worker));
    return heap();
  };
  const start = (await upTo(warmup)).heap_used;
  const middle = (await upTo(Math.floor((warmup + rollouts) / 2))).heap_used;
  const end = await upTo(rollouts);
  const seconds = (performance.now() - t0) / 1000;
  const mb = (b: number) => round(b / (1024 * 1024), 1);
  emit('memory.rollouts', {
    rollouts,
    prompt_kb: promptKb,
    turns,
    concurrency,
    heap_mb_start: mb(start),
    heap_mb_middle: mb(middle),
    heap_mb_end: mb(end.heap_used),
    bytes_per_rollout: Math.round((end.heap_used - start) / (rollouts - warmup)),
    held_at_end: JSON.stringify({ ...(end.held ?? {}), chains: end.chains }),
    rollouts_per_s: round(rollouts / seconds, 1),
  });
  agent.destroy();
  server.proc.kill('SIGINT');
  fake.proc.kill();
  await new Promise((r) => server.proc.once('exit', r));
  rmSync(String(server.info.data_dir), { recursive: true, force: true });
}
