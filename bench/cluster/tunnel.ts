// cluster.tunnel  one node: streamed tokens/s (goal: node / direct >= 0.8), added time to first
//                 token, non-streamed calls/s (concurrency 64); a run on the node agent's URL against
//                 a run on the backend's own URL, both through the daemon's proxy.
import { cpus, loadavg } from 'node:os';
import type { Target } from '../client';
import { chat } from '../client';
import { cpuOf, emit, quantile, round } from '../emit';
import { api, load, runWith, ttft } from './drive';
import type { Cluster } from './parts';

type Path = 'direct' | 'tunnel';
/** CPU µs of the daemon and the node agent per path, and the streamed tokens they served. */
type Used = Record<Path, { daemon: number; nodes: number; tokens: number }>;

/**
 * Streamed and non-streamed rates of both paths (BENCH_SECONDS in all each), in alternating halves so
 * drift (other load on the machine) hits both alike.
 */
async function rates(c: Cluster, direct: Target[], tunnel: Target[]) {
  const long = chat('x'.repeat(1000), { max_tokens: 2000, stream: true });
  const stream = { direct: 0, tunnel: 0 };
  const nonstream = { direct: 0, tunnel: 0 };
  // CPU µs per streamed token of the daemon and the node agent, per path.
  const used: Used = {
    direct: { daemon: 0, nodes: 0, tokens: 0 },
    tunnel: { daemon: 0, nodes: 0, tokens: 0 },
  };
  for (let half = 0; half < 2; half++) {
    for (const [name, ts] of [
      ['direct', direct],
      ['tunnel', tunnel],
    ] as const) {
      const d0 = cpuOf(c.procs.daemon);
      const n0 = cpuOf(c.procs.nodes);
      const r = await load(ts, 8, c.seconds / 2, long);
      used[name].daemon += cpuOf(c.procs.daemon) - d0;
      used[name].nodes += cpuOf(c.procs.nodes) - n0;
      used[name].tokens += r.tokensPerS * r.seconds;
      stream[name] += r.tokensPerS / 2;
      nonstream[name] += (await load(ts, 64, c.seconds / 2, chat('throughput'))).callsPerS / 2;
    }
  }
  return { stream, nonstream, used };
}

export async function tunnel(c: Cluster): Promise<void> {
  const direct = await runWith(c.daemon, c.dir, [`${c.vllmUrls[0]}`], c.nodeToken, 64);
  const tunnel = await runWith(c.daemon, c.dir, [c.nodeUrls[0]], c.nodeToken, 64);
  const both = [direct.targets, tunnel.targets];
  // Warm up both paths (JIT, keep-alive sockets, the proxy's caches).
  for (const ts of both) await load(ts, 16, 1000, chat('warm up'));
  for (const ts of both) await load(ts, 8, 1000, chat('x'.repeat(1000), { max_tokens: 2000, stream: true }));

  const [dFirst, tFirst] = await ttft(
    [direct.targets[0], tunnel.targets[0]],
    Number(process.env.BENCH_N ?? 300),
  );
  const { stream, nonstream, used } = await rates(c, direct.targets, tunnel.targets);
  const perToken = (us: number, path: Path) => round(us / used[path].tokens, 1);
  const dp50 = quantile(dFirst, 0.5);
  const dp99 = quantile(dFirst, 0.99);
  const tp50 = quantile(tFirst, 0.5);
  const tp99 = quantile(tFirst, 0.99);
  emit('cluster.tunnel', {
    direct_tokens_per_s: round(stream.direct, 0),
    node_tokens_per_s: round(stream.tunnel, 0),
    ratio: round(stream.tunnel / stream.direct),
    direct_ttft_p50_ms: round(dp50),
    node_ttft_p50_ms: round(tp50),
    added_ttft_p50_ms: round(tp50 - dp50),
    added_ttft_p99_ms: round(tp99 - dp99),
    direct_calls_per_s: round(nonstream.direct, 1),
    node_calls_per_s: round(nonstream.tunnel, 1),
    calls_ratio: round(nonstream.tunnel / nonstream.direct),
    daemon_cpu_us_per_token_direct: perToken(used.direct.daemon, 'direct'),
    daemon_cpu_us_per_token_node: perToken(used.tunnel.daemon, 'tunnel'),
    node_cpu_us_per_token: perToken(used.tunnel.nodes, 'tunnel'),
    loadavg_1m: round(loadavg()[0], 2),
    cores: cpus().length,
  });
  await api(c.daemon, 'POST', `/api/runs/${direct.id}/stop`);
  await api(c.daemon, 'POST', `/api/runs/${tunnel.id}/stop`);
}
