// Proxy overhead against fake-vllm, proxied vs direct, recording ON (real SQLite store).
// fake-vllm and the proxy each run in their own child process; this process is the client.
//   proxy.overhead  nonstream / stream_ttft: added p50/p99 latency (goal p50 < 1 ms, p99 < 3 ms)
//   proxy.throughput concurrency 64: proxy_rps / direct_rps (goal >= 0.7)
//   proxy.stream     streamed tokens/s: proxy / direct (goal >= 0.8)
// Each also gives a minimal node:http pass-through's figures from the same run (the floor for any
// Node proxy on this machine).
import { Agent } from 'node:http';
import { cpus, loadavg } from 'node:os';
import { DAEMON_NODE_FLAGS } from '../daemon/cli/node-flags';
import { chat, post, type Target } from './client';
import { child, cpuOf, emit, quantile, root, round } from './emit';

const FAKE = `
import { startFakeVllm } from '${root}test/fixtures/fake-vllm.ts';
const f = await startFakeVllm({ model: 'toy' });
process.stdout.write(JSON.stringify({ url: f.url }) + '\\n');
`;

// The floor for any proxy written on Node: node:http in, node:http (keep-alive) out, bytes piped
// back, nothing parsed or recorded. The proxy's figures are also given as a ratio to this one.
const PASSTHROUGH = `
import { Agent, createServer, request } from 'node:http';
const agent = new Agent({ keepAlive: true, maxSockets: Infinity });
const backend = new URL(process.env.BACKEND);
process.on('SIGTERM', () => process.exit(0));
const server = createServer((req, res) => {
  const parts = [];
  req.on('data', (c) => parts.push(c));
  req.on('end', () => {
    const body = Buffer.concat(parts);
    const headers = { 'content-type': 'application/json', 'content-length': body.length };
    const up = request({ host: backend.hostname, port: backend.port, path: req.url, method: 'POST', agent, headers }, (r) => {
      res.writeHead(r.statusCode, { 'content-type': r.headers['content-type'] });
      r.pipe(res);
    });
    up.end(body);
  });
});
server.listen(0, '127.0.0.1', () => process.stdout.write(JSON.stringify({ url: 'http://127.0.0.1:' + server.address().port + '/v1' }) + '\\n'));
`;

const PROXY = `
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Fastify from 'fastify';
import { DaemonConfig } from '${root}daemon/protocol/config.ts';
import { registerProxy } from '${root}daemon/proxy/index.ts';
import { openStore } from '${root}daemon/store/open.ts';
const dataDir = mkdtempSync(join(tmpdir(), 'harness-rl-bench-'));
const store = await openStore('sqlite', dataDir);
const config = DaemonConfig.parse({ port: 0, backends: [process.env.BACKEND] });
const ctx = { store, config, token: 'bench-token', dataDir, baseUrl: () => '', log: () => {} };
const app = Fastify({ logger: false, bodyLimit: config.body_limit_bytes });
await registerProxy(app, ctx);
await app.listen({ port: 0, host: '127.0.0.1' });
const r = await store.createRollout({ kind: 'standalone' });
await store.startAttempt(r.id, 'bench');
process.on('SIGINT', () => process.exit(0));
process.stdout.write(JSON.stringify({ url: 'http://127.0.0.1:' + app.server.address().port + '/r/' + r.id + '/v1', key: r.key }) + '\\n');
`;

const agent = new Agent({ keepAlive: true, maxSockets: 256 });

const call = (t: Target, path: string, body: object) => post(agent, t.base + path, t.key, body);

/** Sequential calls, alternating between the targets so drift (GC, other load) hits all alike. */
async function latencies(targets: Target[], n: number, body: object, pick: 'first' | 'total') {
  const out: number[][] = targets.map(() => []);
  for (let i = 0; i < n; i++)
    for (const [k, t] of targets.entries()) {
      const r = await call(t, '/chat/completions', body);
      out[k].push(pick === 'first' ? r.firstMs : r.totalMs);
    }
  return out;
}

async function throughput(t: Target, concurrency: number, ms: number): Promise<number> {
  let done = 0;
  const end = performance.now() + ms;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < end) {
        await call(t, '/chat/completions', chat('throughput'));
        done++;
      }
    }),
  );
  return done / (ms / 1000);
}

async function streamRate(t: Target, concurrency: number, ms: number): Promise<number> {
  let tokens = 0;
  const t0 = performance.now();
  const end = t0 + ms;
  const long = 'x'.repeat(1000);
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < end) {
        const r = await call(t, '/chat/completions', chat(long, { max_tokens: 2000, stream: true }));
        tokens += r.tokens;
      }
    }),
  );
  return tokens / ((performance.now() - t0) / 1000);
}

export default async function main(): Promise<void> {
  const fake = await child(FAKE);
  const pass = await child(PASSTHROUGH, { BACKEND: fake.info.url });
  // BENCH_PROFILE=dir writes a CPU profile of the proxy process there.
  const profile = process.env.BENCH_PROFILE;
  const prox = await child(PROXY, { BACKEND: fake.info.url }, [
    ...DAEMON_NODE_FLAGS,
    ...(profile ? ['--cpu-prof', `--cpu-prof-dir=${profile}`] : []),
  ]);
  try {
    const direct: Target = { base: fake.info.url, key: 'none' };
    const proxy: Target = { base: prox.info.url, key: prox.info.key };
    const floor: Target = { base: pass.info.url, key: 'none' };
    // Warm up both paths (JIT, keep-alive sockets, the proxy's caches).
    await latencies([direct, floor, proxy], 200, chat('warm up'), 'total');
    await latencies([direct, floor, proxy], 50, chat('warm up', { stream: true }), 'first');

    // BENCH_ONLY=overhead,throughput,stream runs a subset (profiling).
    const only = (process.env.BENCH_ONLY ?? 'overhead,throughput,stream').split(',');
    const n = Number(process.env.BENCH_N ?? 1000);
    for (const mode of only.includes('overhead') ? (['nonstream', 'stream_ttft'] as const) : []) {
      const body =
        mode === 'nonstream' ? chat('how much does the proxy add?') : chat('ttft please', { stream: true });
      const [d, f, p] = await latencies(
        [direct, floor, proxy],
        n,
        body,
        mode === 'nonstream' ? 'total' : 'first',
      );
      const dp50 = quantile(d, 0.5);
      const dp99 = quantile(d, 0.99);
      const pp50 = quantile(p, 0.5);
      const pp99 = quantile(p, 0.99);
      emit('proxy.overhead', {
        mode,
        direct_p50_ms: round(dp50),
        direct_p99_ms: round(dp99),
        proxy_p50_ms: round(pp50),
        proxy_p99_ms: round(pp99),
        added_p50_ms: round(pp50 - dp50),
        added_p99_ms: round(pp99 - dp99),
        passthrough_added_p50_ms: round(quantile(f, 0.5) - dp50),
        passthrough_added_p99_ms: round(quantile(f, 0.99) - dp99),
      });
    }

    const seconds = Number(process.env.BENCH_SECONDS ?? 4) * 1000;
    if (only.includes('throughput')) {
      const f0 = cpuOf(fake.proc);
      const conc = 64;
      const directRps = await throughput(direct, conc, seconds);
      const f1 = cpuOf(fake.proc);
      const q0 = cpuOf(pass.proc);
      const passRps = await throughput(floor, conc, seconds);
      const q1 = cpuOf(pass.proc);
      const p0 = cpuOf(prox.proc);
      const proxyRps = await throughput(proxy, conc, seconds);
      const p1 = cpuOf(prox.proc);
      const perReq = (us: number, rps: number) => us / (rps * (seconds / 1000));
      emit('proxy.throughput', {
        concurrency: conc,
        direct_rps: round(directRps, 1),
        proxy_rps: round(proxyRps, 1),
        ratio: round(proxyRps / directRps),
        passthrough_rps: round(passRps, 1),
        passthrough_ratio: round(passRps / directRps),
        ratio_to_passthrough: round(proxyRps / passRps),
        backend_cpu_us_per_request: round(perReq(f1 - f0, directRps), 0),
        passthrough_cpu_us_per_request: round(perReq(q1 - q0, passRps), 0),
        proxy_cpu_us_per_request: round(perReq(p1 - p0, proxyRps), 0),
        loadavg_1m: round(loadavg()[0], 2),
        cores: cpus().length,
      });
    }
    if (only.includes('stream')) {
      const f0 = cpuOf(fake.proc);
      const directTps = await streamRate(direct, 8, seconds);
      const f1 = cpuOf(fake.proc);
      const q0 = cpuOf(pass.proc);
      const passTps = await streamRate(floor, 8, seconds);
      const q1 = cpuOf(pass.proc);
      const p0 = cpuOf(prox.proc);
      const proxyTps = await streamRate(proxy, 8, seconds);
      const p1 = cpuOf(prox.proc);
      const perTok = (us: number, tps: number) => us / (tps * (seconds / 1000));
      emit('proxy.stream', {
        direct_tokens_per_s: round(directTps, 0),
        proxy_tokens_per_s: round(proxyTps, 0),
        ratio: round(proxyTps / directTps),
        passthrough_tokens_per_s: round(passTps, 0),
        ratio_to_passthrough: round(proxyTps / passTps),
        backend_cpu_us_per_token: round(perTok(f1 - f0, directTps), 1),
        passthrough_cpu_us_per_token: round(perTok(q1 - q0, passTps), 1),
        proxy_cpu_us_per_token: round(perTok(p1 - p0, proxyTps), 1),
      });
    }
  } finally {
    prox.proc.kill('SIGINT');
    pass.proc.kill();
    fake.proc.kill();
    agent.destroy();
  }
}
