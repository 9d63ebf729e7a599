// The GPU path on loopback: a daemon whose runs sample through node agents (`harness-rl node --role
// inference --vllm-url …`) in front of fake-vllm, against runs whose endpoint is the same fake-vllm
// URL. The backends, the node agents and the daemon each run in their own child process; this
// process is the harness side, calling rollout-scoped URLs with rollout keys as harnesses do.
//   cluster.tunnel  one node: streamed tokens/s (goal: node / direct >= 0.8), added time to first
//                   token, non-streamed calls/s (concurrency 64)
//   cluster.scale   4 nodes, 512 concurrent rollouts: llm calls/s, the same against the 4 backends
//                   directly, and the share of the cores each part used (goal: the daemon is not the
//                   bottleneck)
// Recording is on (the daemon's SQLite store), as in any run.
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { Agent } from 'node:http';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { DAEMON_NODE_FLAGS } from '../daemon/cli/node-flags';
import { chat, post, type Target } from './client';
import { child, cpuOf, emit, quantile, root, round } from './emit';

// BACKENDS=n fake-vllm servers (model "toy"), each keeping only its last generation.
const BACKENDS = `
import { startFakeVllm } from '${root}test/fixtures/fake-vllm.ts';
const urls = [];
for (let i = 0; i < Number(process.env.BACKENDS); i++)
  urls.push((await startFakeVllm({ model: 'toy', maxProduced: 1 })).url);
process.stdout.write(JSON.stringify({ urls: urls.join(' ') }) + '\\n');
`;

// One inference node agent per URL in VLLM_URLS, as \`harness-rl node --role inference --vllm-url\`.
const NODES = `
import { join } from 'node:path';
import { startNodeAgent } from '${root}daemon/node/agent.ts';
import { InferenceRole } from '${root}daemon/node/inference.ts';
const urls = [];
for (const vllmUrl of process.env.VLLM_URLS.split(' ')) {
  const dataDir = join(process.env.DATA_DIR, String(urls.length));
  const role = new InferenceRole({ dataDir, vllmUrl, log: () => {} });
  const node = await startNodeAgent({ host: '127.0.0.1', port: 0, token: process.env.NODE_TOKEN, role, log: () => {} });
  urls.push(node.url);
}
process.on('SIGTERM', () => process.exit(0));
process.stdout.write(JSON.stringify({ urls: urls.join(' ') }) + '\\n');
`;

const DAEMON = `
import { startDaemon } from '${root}daemon/daemon.ts';
const d = await startDaemon({
  dataDir: process.env.DATA_DIR,
  port: 0,
  token: 'bench-token',
  log: () => {},
  cluster: { heartbeatTimeoutMs: 600_000 },
});
process.on('SIGTERM', () => void d.close().then(() => process.exit(0)));
process.stdout.write(JSON.stringify({ url: d.url, token: d.token }) + '\\n');
`;

const agent = new Agent({ keepAlive: true, maxSockets: Number.POSITIVE_INFINITY });

const call = (t: Target, body: object) => post(agent, `${t.base}/chat/completions`, t.key, body);

/** A daemon REST call with its token. */
async function api<T>(
  daemon: Record<string, string>,
  method: string,
  path: string,
  body?: unknown,
): Promise<T> {
  const res = await fetch(`${daemon.url}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${daemon.token}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (res.status >= 300) throw new Error(`${method} ${path}: HTTP ${res.status} ${text.slice(0, 300)}`);
  return (text ? JSON.parse(text) : null) as T;
}

/**
 * Starts a run on `endpoints` (trainer: reference, never reached: no rollout finishes) and claims
 * `rollouts` of its rollouts as workers do; resolves with their scoped base URLs and keys.
 */
async function runWith(
  daemon: Record<string, string>,
  dir: string,
  endpoints: string[],
  token: string,
  rollouts: number,
): Promise<{ id: string; targets: Target[] }> {
  const run = await api<{ id: string }>(daemon, 'POST', '/api/runs', {
    base_dir: dir,
    config: {
      name: `bench-${randomBytes(3).toString('hex')}`,
      model: { name: 'toy' },
      inference: { endpoints, token },
      trainer: { endpoint: 'reference' },
      tasks: { file: 'tasks.jsonl', limit: rollouts / 2 },
      harness: { concurrency: rollouts, timeout_s: 3600, max_attempts: 1 },
      algorithm: { n: 2, max_response_tokens: 4096 },
      schedule: { steps: 1, groups_per_step: rollouts / 2 },
    },
  });
  const targets: Target[] = [];
  while (targets.length < rollouts) {
    const claims = await Promise.all(
      Array.from({ length: Math.min(32, rollouts - targets.length) }, () =>
        fetch(`${daemon.url}/api/runs/${run.id}/claim`, {
          method: 'POST',
          headers: { authorization: `Bearer ${daemon.token}`, 'content-type': 'application/json' },
          body: JSON.stringify({ worker: 'bench', wait_ms: 5000 }),
        }).then(async (r) =>
          r.status === 200 ? ((await r.json()) as { openai_base_url: string; key: string }) : null,
        ),
      ),
    );
    for (const c of claims) if (c) targets.push({ base: c.openai_base_url, key: c.key });
  }
  return { id: run.id, targets };
}

/** Calls from `loops` concurrent loops (loop i on target i mod n) for `ms`; calls/s and tokens/s. */
async function load(targets: Target[], loops: number, ms: number, body: object) {
  let calls = 0;
  let tokens = 0;
  let failed = 0;
  let lastError = '';
  const t0 = performance.now();
  const end = t0 + ms;
  await Promise.all(
    Array.from({ length: loops }, async (_, i) => {
      const t = targets[i % targets.length];
      while (performance.now() < end) {
        try {
          tokens += (await call(t, body)).tokens;
          calls++;
        } catch (err) {
          failed++;
          lastError = (err as Error).message;
        }
      }
    }),
  );
  const s = (performance.now() - t0) / 1000;
  if (failed > 0) process.stderr.write(`cluster bench: ${failed} calls failed, last: ${lastError}\n`);
  return { callsPerS: calls / s, tokensPerS: tokens / s, failed, seconds: s };
}

/** Sequential streamed calls alternating between the targets; time to first token of each. */
async function ttft(targets: Target[], n: number): Promise<number[][]> {
  const out: number[][] = targets.map(() => []);
  for (let i = 0; i < n; i++)
    for (const [k, t] of targets.entries())
      out[k].push((await call(t, chat('ttft please', { stream: true }))).firstMs);
  return out;
}

/** CPU time (µs) each process (and this one, `client`) used since the meter started. */
function cpuMeter(procs: Record<string, ChildProcess>) {
  const start = Object.fromEntries(Object.entries(procs).map(([k, p]) => [k, cpuOf(p)]));
  const self = process.cpuUsage();
  return (): Record<string, number> => {
    const mine = process.cpuUsage(self);
    const used: Record<string, number> = {};
    for (const [k, p] of Object.entries(procs)) used[k] = cpuOf(p) - start[k];
    used.client = mine.user + mine.system;
    return used;
  };
}

export default async function main(): Promise<void> {
  const only = (process.env.BENCH_ONLY ?? 'tunnel,scale').split(',');
  const seconds = Number(process.env.BENCH_SECONDS ?? 4) * 1000;
  const token = `node_${randomBytes(8).toString('hex')}`;
  const dir = mkdtempSync(join(tmpdir(), 'harness-rl-bench-cluster-'));
  writeFileSync(
    join(dir, 'tasks.jsonl'),
    Array.from({ length: 256 }, (_, i) => `${JSON.stringify({ prompt: `task ${i}` })}\n`).join(''),
  );
  const started: ChildProcess[] = [];
  const start = async (script: string, env: Record<string, string>, flags: string[] = []) => {
    const c = await child(script, env, flags);
    started.push(c.proc);
    return c;
  };
  try {
    // BENCH_PROFILE=dir writes a CPU profile of the daemon and of the node agents there.
    const profile = process.env.BENCH_PROFILE;
    const prof = profile ? ['--cpu-prof', `--cpu-prof-dir=${profile}`] : [];
    const k = only.includes('scale') ? 4 : 1;
    const backends = await start(BACKENDS, { BACKENDS: String(k) });
    const vllmUrls = backends.info.urls.split(' ');
    const nodes = await start(
      NODES,
      {
        VLLM_URLS: vllmUrls.join(' '),
        NODE_TOKEN: token,
        DATA_DIR: join(dir, 'nodes'),
      },
      prof,
    );
    const nodeUrls = nodes.info.urls.split(' ');
    const daemon = await start(DAEMON, { DATA_DIR: join(dir, 'daemon') }, [...DAEMON_NODE_FLAGS, ...prof]);
    const d = daemon.info;
    const procs = { daemon: daemon.proc, nodes: nodes.proc, backends: backends.proc };

    if (only.includes('tunnel')) {
      const direct = await runWith(d, dir, [`${vllmUrls[0]}`], token, 64);
      const tunnel = await runWith(d, dir, [nodeUrls[0]], token, 64);
      const both = [direct.targets, tunnel.targets];
      // Warm up both paths (JIT, keep-alive sockets, the proxy's caches).
      for (const ts of both) await load(ts, 16, 1000, chat('warm up'));
      for (const ts of both)
        await load(ts, 8, 1000, chat('x'.repeat(1000), { max_tokens: 2000, stream: true }));

      const [dFirst, tFirst] = await ttft(
        [direct.targets[0], tunnel.targets[0]],
        Number(process.env.BENCH_N ?? 300),
      );
      // Alternating halves, so drift (other load on the machine) hits both alike.
      const long = chat('x'.repeat(1000), { max_tokens: 2000, stream: true });
      const stream = { direct: 0, tunnel: 0 };
      const nonstream = { direct: 0, tunnel: 0 };
      // CPU µs per streamed token of the daemon and the node agent, per path.
      const used = { direct: { daemon: 0, nodes: 0, tokens: 0 }, tunnel: { daemon: 0, nodes: 0, tokens: 0 } };
      for (let half = 0; half < 2; half++) {
        for (const [name, ts] of [
          ['direct', direct.targets],
          ['tunnel', tunnel.targets],
        ] as const) {
          const d0 = cpuOf(daemon.proc);
          const n0 = cpuOf(nodes.proc);
          const r = await load(ts, 8, seconds / 2, long);
          used[name].daemon += cpuOf(daemon.proc) - d0;
          used[name].nodes += cpuOf(nodes.proc) - n0;
          used[name].tokens += r.tokensPerS * r.seconds;
          stream[name] += r.tokensPerS / 2;
          nonstream[name] += (await load(ts, 64, seconds / 2, chat('throughput'))).callsPerS / 2;
        }
      }
      const perToken = (us: number, path: keyof typeof used) => round(us / used[path].tokens, 1);
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
      await api(d, 'POST', `/api/runs/${direct.id}/stop`);
      await api(d, 'POST', `/api/runs/${tunnel.id}/stop`);
    }

    if (only.includes('scale')) {
      const rollouts = 512;
      const direct = await runWith(d, dir, vllmUrls, token, rollouts);
      const nodeRun = await runWith(d, dir, nodeUrls, token, rollouts);
      await load(direct.targets, rollouts, 1000, chat('warm up'));
      await load(nodeRun.targets, rollouts, 1000, chat('warm up'));
      // Alternating halves (drift hits both alike); CPU of every part and calls counted per path.
      const rates = { direct: 0, node: 0 };
      const calls = { direct: 0, node: 0 };
      const used = { direct: {} as Record<string, number>, node: {} as Record<string, number> };
      let wallUs = 0;
      for (let half = 0; half < 2; half++) {
        for (const [name, ts] of [
          ['direct', direct.targets],
          ['node', nodeRun.targets],
        ] as const) {
          const meter = cpuMeter(procs);
          const r = await load(ts, rollouts, seconds / 2, chat('scale'));
          for (const [k, us] of Object.entries(meter())) used[name][k] = (used[name][k] ?? 0) + us;
          rates[name] += r.callsPerS / 2;
          calls[name] += r.callsPerS * r.seconds;
          if (name === 'node') wallUs += r.seconds * 1e6;
        }
      }
      const perCall = (name: 'direct' | 'node', k: string) => round(used[name][k] / calls[name], 0);
      const share = (k: string) => round(used.node[k] / (wallUs * cpus().length));
      const daemonUs = used.node.daemon / calls.node;
      emit('cluster.scale', {
        nodes: nodeUrls.length,
        rollouts,
        node_calls_per_s: round(rates.node, 1),
        direct_calls_per_s: round(rates.direct, 1),
        ratio: round(rates.node / rates.direct),
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
      await api(d, 'POST', `/api/runs/${direct.id}/stop`);
      await api(d, 'POST', `/api/runs/${nodeRun.id}/stop`);
    }
  } finally {
    // The daemon first (it closes its node connections and store), then what it was connected to.
    for (const p of started.reverse()) {
      const exited = new Promise((r) => p.once('exit', r));
      p.kill('SIGTERM');
      await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
    }
    agent.destroy();
    rmSync(dir, { recursive: true, force: true });
  }
}
