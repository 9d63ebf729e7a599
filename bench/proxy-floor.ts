// Where the proxy's CPU per small call stands against its floor, at 64 clients (non-streamed calls of
// proxy.throughput), each target measured in short slices in a rotating order, round after round:
//   proxy.floor      per target: CPU µs per call (its process, all threads: the median round, and the
//                    quartiles) and calls/s. Targets: the token pass-through (bench/proxy/targets.ts),
//                    the floor (servers/proxy-floor.ts: the daemon's own HTTP client, request parse,
//                    answer scan, record fields and the harness's answer; no scope, bridge, pool or call
//                    state), the floor storing each call (its Recorder and a real SQLite store), and
//                    the proxy (servers/proxy.ts) storing nothing and storing every call.
//   proxy.floor_split the medians over rounds of each round's differences: floor − token pass-through
//                    (parsing and keeping the tokens), floor stored − floor (the record), proxy
//                    unrecorded − floor (the proxy's own per-call work), proxy − proxy unrecorded.
// BENCH_ROUNDS (default 8; the first is a warm-up, not counted) and BENCH_SECONDS (default 2) a slice.
import { Agent } from 'node:http';
import { loadavg } from 'node:os';
import { DAEMON_NODE_FLAGS } from '../daemon/cli/node-flags';
import { chat, post, type Target } from './client';
import { bundledChild, child, cpuOf, emit, quantile, round } from './emit';
import { FAKE, PASSTHROUGH } from './proxy/targets';

const agent = new Agent({ keepAlive: true, maxSockets: 256 });
const CLIENTS = 64;

/** `CLIENTS` clients posting `body` back to back for `ms`: the calls made. */
async function slice(t: Target, ms: number, body: object): Promise<number> {
  let done = 0;
  const end = performance.now() + ms;
  await Promise.all(
    Array.from({ length: CLIENTS }, async () => {
      while (performance.now() < end) {
        await post(agent, `${t.base}/chat/completions`, t.key, body);
        done++;
      }
    }),
  );
  return done;
}

export default async function main(): Promise<void> {
  const rounds = Number(process.env.BENCH_ROUNDS ?? 8);
  const ms = Number(process.env.BENCH_SECONDS ?? 2) * 1000;
  const fake = await child(FAKE);
  const backend = { BACKEND: fake.info.url };
  const proxy = (record: 'on' | 'off') =>
    bundledChild(
      'servers/proxy.ts',
      { ...backend, STORE: 'sqlite', MODEL_FILES: fake.info.modelDir, RECORD: record },
      DAEMON_NODE_FLAGS,
    );
  const floor = (record: 'on' | 'off') =>
    bundledChild('servers/proxy-floor.ts', { ...backend, RECORD: record }, DAEMON_NODE_FLAGS);
  const started = [
    ['token_passthrough', await child(PASSTHROUGH, { ...backend, TOKENS: '1' })],
    ['floor', await floor('off')],
    ['floor_stored', await floor('on')],
    ['proxy_unrecorded', await proxy('off')],
    ['proxy', await proxy('on')],
  ] as const;
  const targets = started.map(([name, p]) => ({
    name,
    proc: p.proc,
    target: { base: p.info.url, key: p.info.key ?? 'none' } as Target,
    cpu: [] as number[],
    rate: [] as number[],
  }));
  const body = chat('throughput');
  try {
    for (let r = 0; r < rounds; r++)
      for (let k = 0; k < targets.length; k++) {
        const t = targets[(k + r) % targets.length];
        const c0 = cpuOf(t.proc);
        const calls = await slice(t.target, ms, body);
        if (r === 0) continue; // warm-up: JIT, sockets, the proxy's caches
        t.cpu.push((cpuOf(t.proc) - c0) / calls);
        t.rate.push(calls / (ms / 1000));
      }
    const load = round(loadavg()[0], 2);
    for (const t of targets)
      emit('proxy.floor', {
        target: t.name,
        cpu_us_per_call: round(quantile(t.cpu, 0.5), 1),
        cpu_us_q25: round(quantile(t.cpu, 0.25), 1),
        cpu_us_q75: round(quantile(t.cpu, 0.75), 1),
        calls_per_s: round(quantile(t.rate, 0.5), 0),
        rounds: t.cpu.length,
        loadavg_1m: load,
      });
    const cpuOfTarget = (name: string) => targets.find((t) => t.name === name)?.cpu ?? [];
    const diff = (a: string, b: string) => {
      const x = cpuOfTarget(a);
      const y = cpuOfTarget(b);
      return round(
        quantile(
          x.map((v, i) => v - y[i]),
          0.5,
        ),
        1,
      );
    };
    emit('proxy.floor_split', {
      keep_tokens_us: diff('floor', 'token_passthrough'),
      record_us: diff('floor_stored', 'floor'),
      proxy_own_us: diff('proxy_unrecorded', 'floor'),
      proxy_record_us: diff('proxy', 'proxy_unrecorded'),
      proxy_over_floor_stored_us: diff('proxy', 'floor_stored'),
      loadavg_1m: load,
    });
  } finally {
    for (const t of targets) t.proc.kill(t.name === 'token_passthrough' ? 'SIGTERM' : 'SIGINT');
    fake.proc.kill();
  }
}
