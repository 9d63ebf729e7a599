// proxy.goals, last, per proxy: the three figures issue #38 sets against the token pass-through, each
// with its goal and whether it was met in this run (the lines before it hold them), and the proxy's
// CPU per bridged call of proxy.conversation (its process's user + system time over the bridged phase
// / the calls; goal <= 1 ms) beside the native one.
import { loadavg } from 'node:os';
import { emit, round } from '../emit';

/** The figures issue #38 sets against the token pass-through, as this run measured them. */
export interface Goals {
  /** Non-streamed small calls at 64 clients, proxy / token pass-through. */
  calls?: number;
  /** Streamed tokens/s, proxy / token pass-through. */
  stream?: number;
  /** p50 latency of a non-streamed call added over the token pass-through, ms. */
  p50?: number;
  /** The proxy's CPU per bridged call of proxy.conversation (its process, over the bridged phase), µs. */
  bridged?: number;
  /** The same for the native calls of those conversations, measured in the same rounds, µs. */
  native?: number;
}

/** One line with each goal's figure, its bound and whether it was met (null: its phase did not run). */
export function emitGoals(store: string, g: Goals): void {
  const met = (v: number | undefined, ok: (v: number) => boolean) => (v === undefined ? null : ok(v));
  emit('proxy.goals', {
    store,
    calls_ratio_to_token_passthrough: g.calls ?? null,
    calls_goal: '>= 0.9',
    calls_met: met(g.calls, (v) => v >= 0.9),
    stream_ratio_to_token_passthrough: g.stream ?? null,
    stream_goal: '>= 0.95',
    stream_met: met(g.stream, (v) => v >= 0.95),
    p50_added_over_token_passthrough_ms: g.p50 ?? null,
    p50_goal: '< 0.3 ms',
    p50_met: met(g.p50, (v) => v < 0.3),
    bridged_cpu_us_per_call: g.bridged ?? null,
    bridged_cpu_goal: '<= 1000 us',
    bridged_cpu_met: met(g.bridged, (v) => v <= 1000),
    native_cpu_us_per_call: g.native ?? null,
    loadavg_1m: round(loadavg()[0], 2),
  });
}
