// Proxy overhead against fake-vllm, proxied vs direct, recording ON (a real SQLite store, and a
// PostgreSQL one beside it when HARNESS_RL_TEST_PG answers). fake-vllm, a minimal pass-through and
// each proxy run in their own child process (the proxy bundled as the daemon is:
// servers/proxy.ts; proxy/targets.ts starts them); this process is the client. The phases, in this
// order, each explained where it is measured:
//   proxy.overhead     proxy/overhead.ts: added latency and the CPU of a lone call
//   proxy.throughput   proxy/calls.ts: small calls at 64 clients
//   proxy.agent        proxy/calls.ts: an agent's ~12 KB call at 16 clients
//   proxy.stream       proxy/stream.ts: streamed tokens/s
//   proxy.conversation proxy/conversation.ts: agent conversations, token bridge on and off
//   proxy.goals        proxy/goals.ts: last, per proxy, issue #38's goals and whether this run met them
//   proxy.profile      proxy/profile.ts: with BENCH_PROFILE=dir, the CPU per call by stage
//   BENCH_ONLY=overhead,throughput,agent,stream,conversation runs a subset (profiling)
//   BENCH_N (1000) calls per target for proxy.overhead, BENCH_SECONDS (4) a measurement for the others
//   BENCH_ROUNDS=k   measures each target k times per phase in a rotating order (median rate)
//   BENCH_BASELINE=<git rev> adds that commit's proxy (on each store) to every figure, measured
//                    alternately with this checkout's: a change judged against its parent in one run
//   BENCH_UNRECORDED=1 adds this checkout's proxy on SQLite with no call stored (store
//                    `sqlite-unrecorded`): the floor of the proxy's own path, without its record
// The pass-through (node:http in and out, nothing parsed or recorded) is the floor for any Node
// proxy on this machine; it is measured in the same run, alternating with the others. The token
// pass-through beside it asks the backend for the proxy's token ids and logprobs (ratio_to_token_
// passthrough): the floor for a proxy that must keep them.
import { chat } from './client';
import { agentPhase, throughputPhase } from './proxy/calls';
import { conversation } from './proxy/conversation';
import { agent, latencies } from './proxy/drive';
import { emitGoals, type Goals } from './proxy/goals';
import type { Phase } from './proxy/measure';
import { overhead } from './proxy/overhead';
import { emitProfiles } from './proxy/profile';
import { stream } from './proxy/stream';
import { startTargets, stopTargets } from './proxy/targets';

export default async function main(): Promise<void> {
  const t = await startTargets();
  const goals = new Map<string, Goals>(t.proxies.map((p) => [p.store, {}]));
  try {
    const all = [t.direct, t.floor, t.tokenFloor, ...t.proxies.map((p) => p.target)];
    // Warm up every path (JIT, keep-alive sockets, the proxy's caches).
    await latencies(all, 200, chat('warm up'), 'total');
    await latencies(all, 50, chat('warm up', { stream: true }), 'first');

    const only = (process.env.BENCH_ONLY ?? 'overhead,throughput,agent,stream,conversation').split(',');
    const phase: Phase = {
      t,
      goals,
      ms: Number(process.env.BENCH_SECONDS ?? 4) * 1000,
      rounds: Number(process.env.BENCH_ROUNDS ?? 1),
    };
    if (only.includes('overhead')) await overhead(phase, all, Number(process.env.BENCH_N ?? 1000));
    if (only.includes('throughput')) await throughputPhase(phase);
    if (only.includes('agent')) await agentPhase(phase);
    if (only.includes('stream')) await stream(phase);
    if (only.includes('conversation')) await conversation(phase);
  } finally {
    await stopTargets(t);
    agent.destroy();
  }
  for (const [store, g] of goals) emitGoals(store, g);
  emitProfiles(t);
}
