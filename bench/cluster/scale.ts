// cluster.scale   4 nodes, 512 concurrent rollouts: llm calls/s, the same against the 4 backends
//                 directly, and the share of the cores each part used (goal: the daemon is not the
//                 bottleneck)
import { cpus, loadavg } from 'node:os';
import { chat, type Target } from '../client';
import { emit, round } from '../emit';
import { api, cpuMeter, load, runWith } from './drive';
import type { Cluster } from './parts';

const ROLLOUTS = 512;
type Path = 'direct' | 'node';

/**
 * Both paths' calls/s at `ROLLOUTS` loops (BENCH_SECONDS in all each), in alternating halves (drift
 * hits both alike); CPU of every part and calls counted per path, and the node run's wall time.
 */
async function rates(c: Cluster, direct: Target[], node: Target[]) {
  const rates = { direct: 0, node: 0 };
  const calls = { direct: 0, node: 0 };
  const used = { direct: {} as Record<string, number>, node: {} as Record<string, number> };
  let wallUs = 0;
  for (let half = 0; half < 2; half++) {
    for (const [name, ts] of [
      ['direct', direct],
      ['node', node],
    ] as const) {
      const meter = cpuMeter(c.procs);
      const r = await load(ts, ROLLOUTS, c.seconds / 2, chat('scale'));
      for (const [k, us] of Object.entries(meter())) used[name][k] = (used[name][k] ?? 0) + us;
      rates[name] += r.callsPerS / 2;
      calls[name] += r.callsPerS * r.seconds;
      if (name === 'node') wallUs += r.seconds * 1e6;
    }
  }
  return { rates, calls, used, wallUs };
}

export async function scale(c: Cluster): Promise<void> {
  const direct = await runWith(c.daemon, c.dir, c.vllmUrls, c.nodeToken, ROLLOUTS);
  const nodeRun = await runWith(c.daemon, c.dir, c.nodeUrls, c.nodeToken, ROLLOUTS);
  await load(direct.targets, ROLLOUTS, 1000, chat('warm up'));
  await load(nodeRun.targets, ROLLOUTS, 1000, chat('warm up'));
  const { rates: r, calls, used, wallUs } = await rates(c, direct.targets, nodeRun.targets);
  const perCall = (name: Path, k: string) => round(used[name][k] / calls[name], 0);
  const share = (k: string) => round(used.node[k] / (wallUs * cpus().length));
  const daemonUs = used.node.daemon / calls.node;
  emit('cluster.scale', {
    nodes: c.nodeUrls.length,
    rollouts: ROLLOUTS,
    node_calls_per_s: round(r.node, 1),
    direct_calls_per_s: round(r.direct, 1),
    ratio: round(r.node / r.direct),
    // Shares of all the machine's cores while the node run was measured.
    daemon_cpu_share: share('daemon'),
    nodes_cpu_share: share('nodes'),
    backends_cpu_share: share('backends'),
    client_cpu_share: share('client'),
    daemon_cpu_us_per_call: round(daemonUs, 0),
    daemon_cpu_us_per_call_direct: perCall('direct', 'daemon'),
    nodes_cpu_us_per_call: perCall('node', 'nodes'),
    backends_cpu_us_per_call: perCall('node', 'backends'),
    client_cpu_us_per_call: perCall('node', 'client'),
    // What one core of the daemon could carry at this cost per call.
    daemon_ceiling_calls_per_s: round(1e6 / daemonUs, 0),
    loadavg_1m: round(loadavg()[0], 2),
    cores: cpus().length,
  });
  await api(c.daemon, 'POST', `/api/runs/${direct.id}/stop`);
  await api(c.daemon, 'POST', `/api/runs/${nodeRun.id}/stop`);
}
