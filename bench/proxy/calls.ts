// Non-streamed calls at a fixed number of clients, every target measured for BENCH_SECONDS (4) a round:
//   proxy.throughput concurrency 64: proxy_rps / direct_rps and / passthrough_rps (goal >= 0.8 of it)
//   proxy.agent      concurrency 16, an agent's mid-task call (~12 KB: tools, tool calls, results):
//                    what the proxy costs where per-byte work (parsing, checking, the record) counts
import { chat } from '../client';
import { emit, round } from '../emit';
import { agentCall, throughput } from './drive';
import type { Goals } from './goals';
import { around, eachTarget, load, type Phase, ratios } from './measure';

/** Non-streamed calls of `body` at `conc` clients: proxy, pass-through and direct rates and CPU. */
async function callsPhase(p: Phase, bench: string, phase: string, conc: number, body: object) {
  const [d, f, tf, ...xs] = await eachTarget(p, phase, (t) => throughput(t, conc, p.ms, body));
  for (const [i, proxy] of p.t.proxies.entries()) {
    const x = xs[i];
    if (bench === 'proxy.throughput') (p.goals.get(proxy.store) as Goals).calls = round(x.rate / tf.rate);
    emit(bench, {
      store: proxy.store,
      concurrency: conc,
      request_bytes: JSON.stringify(body).length,
      direct_rps: round(d.rate, 1),
      passthrough_rps: round(f.rate, 1),
      token_passthrough_rps: round(tf.rate, 1),
      proxy_rps: round(x.rate, 1),
      ...ratios(d.rate, f.rate, tf.rate, x.rate),
      backend_cpu_us_per_request: round(d.cpuUs / d.calls, 0),
      passthrough_cpu_us_per_request: round(f.cpuUs / f.calls, 0),
      token_passthrough_cpu_us_per_request: round(tf.cpuUs / tf.calls, 0),
      proxy_cpu_us_per_request: round(x.cpuUs / x.calls, 0),
      ...around('request', (m) => m.calls, {
        direct: d,
        passthrough: f,
        token_passthrough: tf,
        proxy: x,
      }),
      ...load(),
    });
  }
}

export const throughputPhase = (p: Phase) =>
  callsPhase(p, 'proxy.throughput', 'throughput', 64, chat('throughput'));

export const agentPhase = (p: Phase) => callsPhase(p, 'proxy.agent', 'agent', 16, agentCall());
