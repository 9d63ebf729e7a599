// proxy.overhead   nonstream / stream_ttft: added p50/p99 latency, over direct and over the pass-through
//                  (goal over the pass-through: p50 < 0.5 ms, p99 < 2 ms), and the CPU a lone call
//                  costs the proxy and the token pass-through (whole process, wake-ups included).
//                  BENCH_N (1000) sequential calls per target, alternating between them.
import { chat, type Target } from '../client';
import { cpuOf, emit, quantile, round } from '../emit';
import { latencies } from './drive';
import type { Goals } from './goals';
import { load, type Phase } from './measure';

export async function overhead(p: Phase, all: Target[], n: number): Promise<void> {
  const { tokenPass, proxies } = p.t;
  for (const mode of ['nonstream', 'stream_ttft'] as const) {
    const body =
      mode === 'nonstream' ? chat('how much does the proxy add?') : chat('ttft please', { stream: true });
    const procs = [tokenPass.proc, ...proxies.map((x) => x.proc)];
    const cpu0 = procs.map(cpuOf);
    const [d, f, tf, ...ps] = await latencies(all, n, body, mode === 'nonstream' ? 'total' : 'first');
    // CPU per lone call: each process serves only its own target's calls in this phase
    const [tokenCpu, ...proxyCpu] = procs.map((proc, i) => round((cpuOf(proc) - cpu0[i]) / n, 1));
    const [d50, d99, f50, f99] = [quantile(d, 0.5), quantile(d, 0.99), quantile(f, 0.5), quantile(f, 0.99)];
    const [t50, t99] = [quantile(tf, 0.5), quantile(tf, 0.99)];
    for (const [i, x] of proxies.entries()) {
      const [p50, p99] = [quantile(ps[i], 0.5), quantile(ps[i], 0.99)];
      if (mode === 'nonstream') (p.goals.get(x.store) as Goals).p50 = round(p50 - t50);
      emit('proxy.overhead', {
        mode,
        store: x.store,
        direct_p50_ms: round(d50),
        direct_p99_ms: round(d99),
        proxy_p50_ms: round(p50),
        proxy_p99_ms: round(p99),
        added_p50_ms: round(p50 - d50),
        added_p99_ms: round(p99 - d99),
        passthrough_added_p50_ms: round(f50 - d50),
        passthrough_added_p99_ms: round(f99 - d99),
        added_over_passthrough_p50_ms: round(p50 - f50),
        added_over_passthrough_p99_ms: round(p99 - f99),
        token_passthrough_added_p50_ms: round(t50 - d50),
        token_passthrough_added_p99_ms: round(t99 - d99),
        added_over_token_passthrough_p50_ms: round(p50 - t50),
        added_over_token_passthrough_p99_ms: round(p99 - t99),
        proxy_cpu_us_per_call: proxyCpu[i],
        token_passthrough_cpu_us_per_call: tokenCpu,
        ...load(),
      });
    }
  }
}
