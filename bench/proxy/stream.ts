// proxy.stream     streamed tokens/s at 8 clients: proxy / direct and / pass-through (goal >= 0.9 of
//                  it), every target measured for BENCH_SECONDS (4) a round
import { emit, round } from '../emit';
import { streamRate } from './drive';
import type { Goals } from './goals';
import { around, eachTarget, load, type Phase, ratios } from './measure';

export async function stream(p: Phase): Promise<void> {
  const [d, f, tf, ...xs] = await eachTarget(p, 'stream', (t) => streamRate(t, 8, p.ms));
  for (const [i, proxy] of p.t.proxies.entries()) {
    const x = xs[i];
    (p.goals.get(proxy.store) as Goals).stream = round(x.rate / tf.rate);
    emit('proxy.stream', {
      store: proxy.store,
      direct_tokens_per_s: round(d.rate, 0),
      passthrough_tokens_per_s: round(f.rate, 0),
      token_passthrough_tokens_per_s: round(tf.rate, 0),
      proxy_tokens_per_s: round(x.rate, 0),
      ...ratios(d.rate, f.rate, tf.rate, x.rate),
      backend_cpu_us_per_token: round(d.cpuUs / d.tokens, 1),
      passthrough_cpu_us_per_token: round(f.cpuUs / f.tokens, 1),
      token_passthrough_cpu_us_per_token: round(tf.cpuUs / tf.tokens, 1),
      proxy_cpu_us_per_token: round(x.cpuUs / x.tokens, 1),
      ...around('token', (m) => m.tokens, { direct: d, passthrough: f, token_passthrough: tf, proxy: x }),
      calls: x.calls,
      ...load(),
    });
  }
}
