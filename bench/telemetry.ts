// Telemetry's cost to the proxy, in one run: the daemon with /metrics and OTLP export (to a loopback
// sink) on against both off, alternating rounds against one fake-vllm (everything in this process).
//   telemetry.throughput  calls/s on / off (goal >= 0.95), and CPU per call off / on (steadier on a
//                         shared machine: other processes' load does not count); otlp_ratio_paired:
//                         OTLP export alone (on against metrics only), the median of each round's ratio
//   telemetry.hot_path    ns per recorded call spent in the metrics counters and the span export
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Daemon, startDaemon } from '../daemon/daemon';
import type { NewLlmCall } from '../daemon/protocol/entities';
import { DaemonMetrics } from '../daemon/telemetry/metrics';
import { SpanExport } from '../daemon/telemetry/traces';
import { emit, root, round } from './emit';

const CALLS = Number(process.env.BENCH_TELEMETRY_CALLS ?? 400);
const CONCURRENCY = 16;
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);

/** Calls/s, and this process's CPU per call in µs (the daemon, fake-vllm and the client all live here). */
async function rate(d: Daemon): Promise<{ rps: number; cpuUs: number }> {
  const headers = { authorization: `Bearer ${d.token}`, 'content-type': 'application/json' };
  const created = await (
    await fetch(`${d.url}/api/rollouts`, { method: 'POST', headers, body: '{}' })
  ).json();
  const { key, openai_base_url } = created as { key: string; openai_base_url: string };
  let next = 0;
  const t0 = performance.now();
  const cpu0 = process.cpuUsage();
  const worker = async () => {
    while (next++ < CALLS) {
      const res = await fetch(`${openai_base_url}/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'toy', messages: [{ role: 'user', content: `q${next}` }] }),
      });
      await res.text();
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  const cpu = process.cpuUsage(cpu0);
  return { rps: CALLS / ((performance.now() - t0) / 1000), cpuUs: (cpu.user + cpu.system) / CALLS };
}

async function hotPath(): Promise<{ metrics_ns: number; spans_ns: number }> {
  const call = {
    rollout_id: null,
    attempt_id: null,
    wire_api: 'chat',
    status: 'ok',
    token_source: 'backend',
    usage: { prompt_tokens: 20, completion_tokens: 8 },
    total_ms: 12,
    queue_ms: 0.4,
    bridge: null,
    model: 'toy',
    request: { model: 'toy' },
    finish_reason: 'stop',
  } as unknown as NewLlmCall;
  const metrics = new DaemonMetrics({
    store: null as never,
    recorderQueue: () => 0,
    spans: () => null,
    log: () => {},
  });
  const spans = new SpanExport({
    endpoint: 'http://127.0.0.1:9/v1/traces',
    protocol: 'http/protobuf',
    content: false,
    maxQueue: 1_000_000,
    delayMs: 3_600_000,
    version: 'bench',
  });
  const n = 200_000;
  for (let i = 0; i < 10_000; i++) metrics.observeCall(call);
  let t = process.hrtime.bigint();
  for (let i = 0; i < n; i++) metrics.observeCall(call);
  const metricsNs = Number(process.hrtime.bigint() - t) / n;
  t = process.hrtime.bigint();
  for (let i = 0; i < n / 10; i++) spans.onCall(call);
  // The spans themselves are made on the next turn of the event loop, off the call's path.
  const spansNs = Number(process.hrtime.bigint() - t) / (n / 10);
  // Its spans go nowhere (a closed port): shut it so nothing of it runs during the throughput phase.
  await spans.close();
  return { metrics_ns: round(metricsNs, 0), spans_ns: round(spansNs, 0) };
}

export default async function main(): Promise<void> {
  emit('telemetry.hot_path', await hotPath());
  // Imported by path: the fixture is outside bench/'s TypeScript project.
  const { startFakeVllm } = (await import(`${root}test/fixtures/fake-vllm.ts`)) as {
    startFakeVllm(o: { model: string }): Promise<{ url: string; close(): Promise<void> }>;
  };
  const fake = await startFakeVllm({ model: 'toy' });
  const sink = createServer((req, res) => req.resume().on('end', () => res.end()));
  await new Promise<void>((r) => sink.listen(0, '127.0.0.1', r));
  const sinkUrl = `http://127.0.0.1:${(sink.address() as AddressInfo).port}/v1/traces`;
  const dirs: string[] = [];
  const start = (mode: 'on' | 'off' | 'metrics') => {
    const dataDir = mkdtempSync(join(tmpdir(), 'harness-rl-bench-'));
    dirs.push(dataDir);
    return startDaemon({
      dataDir,
      port: 0,
      token: `bench_${randomBytes(8).toString('hex')}`,
      backends: [fake.url],
      config:
        mode === 'on' ? { metrics: true, otlp: { endpoint: sinkUrl } } : { metrics: mode === 'metrics' },
    });
  };
  const on = await start('on');
  const off = await start('off');
  const metricsOnly = await start('metrics');
  const rates = { on: [] as number[], off: [] as number[], metrics: [] as number[] };
  const cpu = { on: [] as number[], off: [] as number[], metrics: [] as number[] };
  try {
    await rate(on);
    await rate(off);
    await rate(metricsOnly);
    for (let i = 0; i < ROUNDS; i++) {
      // Alternating, so load from others on the machine falls on both alike.
      for (const [name, d] of [
        ['off', off],
        ['on', on],
        ['metrics', metricsOnly],
      ] as const) {
        const m = await rate(d);
        rates[name].push(m.rps);
        cpu[name].push(m.cpuUs);
      }
    }
  } finally {
    await on.close();
    await off.close();
    await metricsOnly.close();
    await fake.close();
    sink.close();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  }
  const median = (v: number[]) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)]!;
  // Each round's pair measured back to back: the machine's load moves less within a round than across.
  const paired = (a: number[], b: number[]) => round(median(a.map((x, i) => x / b[i]!)), 3);
  emit('telemetry.throughput', {
    calls: CALLS,
    concurrency: CONCURRENCY,
    rounds: ROUNDS,
    on_rps: round(median(rates.on), 1),
    off_rps: round(median(rates.off), 1),
    ratio: round(median(rates.on) / median(rates.off), 3),
    on_cpu_us_per_call: round(median(cpu.on), 0),
    off_cpu_us_per_call: round(median(cpu.off), 0),
    cpu_ratio: round(median(cpu.off) / median(cpu.on), 3),
    metrics_only_rps: round(median(rates.metrics), 1),
    metrics_only_cpu_us_per_call: round(median(cpu.metrics), 0),
    // OTLP export alone: on (metrics + export) against metrics only, round by round
    otlp_ratio_paired: paired(rates.on, rates.metrics),
    ratio_paired: paired(rates.on, rates.off),
  });
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
