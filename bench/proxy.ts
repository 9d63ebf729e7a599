// Proxy overhead against fake-vllm, proxied vs direct, recording ON (a real SQLite store, and a
// PostgreSQL one beside it when HARNESS_RL_TEST_PG answers). fake-vllm, a minimal pass-through and
// each proxy run in their own child process (the proxy bundled as the daemon is:
// servers/proxy.ts); this process is the client.
//   proxy.overhead   nonstream / stream_ttft: added p50/p99 latency, over direct and over the pass-through
//                    (goal over the pass-through: p50 < 0.5 ms, p99 < 2 ms), and the CPU a lone call
//                    costs the proxy and the token pass-through (whole process, wake-ups included)
//   proxy.throughput concurrency 64: proxy_rps / direct_rps and / passthrough_rps (goal >= 0.8 of it)
//   proxy.agent      concurrency 16, an agent's mid-task call (~12 KB: tools, tool calls, results):
//                    what the proxy costs where per-byte work (parsing, checking, the record) counts
//   proxy.stream     streamed tokens/s: proxy / direct and / pass-through (goal >= 0.9 of it)
//   proxy.conversation 16 agent conversations at once, each resending its growing history (12 turns,
//                    then anew), on rollouts with the token bridge on and off: calls/s, the proxy's
//                    CPU per call and the share of calls bridged (no pass-through can bridge)
//   proxy.profile    with BENCH_PROFILE=dir: the proxy's CPU per call by stage in the throughput,
//                    stream and conversation (bridged, native) phases, from a V8 CPU profile (the profiler itself adds to every stage)
//   proxy.goals      last, per proxy: the three figures issue #38 sets against the token pass-through,
//                    each with its goal and whether it was met in this run (the lines above hold them),
//                    and the proxy's CPU per bridged call of proxy.conversation (its process's user +
//                    system time over the bridged phase / the calls; goal <= 1 ms) beside the native one
//   BENCH_ROUNDS=k   measures each target k times per phase in a rotating order (median rate)
//   BENCH_BASELINE=<git rev> adds that commit's proxy (on each store) to every figure, measured
//                    alternately with this checkout's: a change judged against its parent in one run
//   BENCH_UNRECORDED=1 adds this checkout's proxy on SQLite with no call stored (store
//                    `sqlite-unrecorded`): the floor of the proxy's own path, without its record
// The pass-through (node:http in and out, nothing parsed or recorded) is the floor for any Node
// proxy on this machine; it is measured in the same run, alternating with the others. The token
// pass-through beside it asks the backend for the proxy's token ids and logprobs (ratio_to_token_
// passthrough): the floor for a proxy that must keep them.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, symlinkSync } from 'node:fs';
import { Agent } from 'node:http';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { DAEMON_NODE_FLAGS } from '../daemon/cli/node-flags';
import { dropPgSchema, pgSchemaUrl, postgresProblem } from '../daemon/store/pg-testing';
import { chat, post, postJson, type Target } from './client';
import { bundledChild, child, cpuOf, emit, machineTimes, quantile, root, round } from './emit';
import { monotonicUs, newestProfile, stagesPerCall } from './profile';

export const FAKE = `
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startFakeVllm } from '${root}test/fixtures/fake-vllm.ts';
import { writeToyModelFolder } from '${root}test/fixtures/toy-model.ts';
const f = await startFakeVllm({ model: 'toy' });
const modelDir = writeToyModelFolder(join(mkdtempSync(join(tmpdir(), 'harness-rl-bench-toy-')), 'toy'));
process.stdout.write(JSON.stringify({ url: f.url, modelDir }) + '\\n');
`;

// The floor for any proxy written on Node: node:http in, node:http (keep-alive) out, bytes piped
// back, nothing parsed or recorded. The proxy's figures are also given as a ratio to this one.
// With TOKENS=1 it asks the backend for what the proxy asks for (token ids, logprobs; appended to
// the body's text) and pipes the larger answer back as it is: the floor for a proxy that keeps the
// tokens, where the backend's extra work and bytes are counted but nothing is read or recorded.
export const PASSTHROUGH = `
import { Agent, createServer, request } from 'node:http';
const agent = new Agent({ keepAlive: true, maxSockets: Infinity });
const backend = new URL(process.env.BACKEND);
process.on('SIGTERM', () => process.exit(0));
const server = createServer((req, res) => {
  const parts = [];
  req.on('data', (c) => parts.push(c));
  req.on('end', () => {
    let body = Buffer.concat(parts);
    if (process.env.TOKENS === '1')
      body = Buffer.concat([body.subarray(0, body.lastIndexOf(0x7d)), Buffer.from(',"return_token_ids":true,"logprobs":true}')]);
    const headers = { 'content-type': 'application/json', 'content-length': body.length };
    const up = request({ host: backend.hostname, port: backend.port, path: req.url, method: 'POST', agent, headers }, (r) => {
      res.writeHead(r.statusCode, { 'content-type': r.headers['content-type'] });
      r.pipe(res);
    });
    up.end(body);
  });
});
// The client's sockets idle while the other targets are measured: node's 5 s limit would close them
// under it (a reset mid-run), as fake-vllm's and the daemon's longer limits do not.
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => process.stdout.write(JSON.stringify({ url: 'http://127.0.0.1:' + server.address().port + '/v1' }) + '\\n'));
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

interface Rate {
  rate: number;
  calls: number;
  tokens: number;
}

/** `concurrency` clients posting `body` back to back for `ms`. */
async function throughput(t: Target, concurrency: number, ms: number, body: object): Promise<Rate> {
  let done = 0;
  const end = performance.now() + ms;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < end) {
        await call(t, '/chat/completions', body);
        done++;
      }
    }),
  );
  return { rate: done / (ms / 1000), calls: done, tokens: 0 };
}

/**
 * An agent's call mid-task: a system prompt, 8 tools and 12 turns of tool calls and results, ~12 KB
 * of JSON (the toy tokenizer is byte-level: ~12k prompt ids back from the backend).
 */
function agentCall(): object {
  const tools = Array.from({ length: 8 }, (_, i) => ({
    type: 'function',
    function: {
      name: `tool_${i}`,
      description: 'Reads or edits the workspace. '.repeat(4),
      parameters: {
        type: 'object',
        properties: {
          path: { type: 'string', description: 'a path in the workspace' },
          line: { type: 'integer' },
        },
        required: ['path'],
      },
    },
  }));
  const messages: object[] = [{ role: 'system', content: 'You are a careful coding agent. '.repeat(40) }];
  messages.push({ role: 'user', content: 'Fix the failing test in src/parser.ts.' });
  for (let i = 0; i < 6; i++) {
    messages.push({
      role: 'assistant',
      content: null,
      tool_calls: [
        {
          id: `call_${i}`,
          type: 'function',
          function: { name: 'tool_1', arguments: `{"path":"src/f${i}.ts"}` },
        },
      ],
    });
    messages.push({
      role: 'tool',
      tool_call_id: `call_${i}`,
      content: `export const line${i} = ${i};\n`.repeat(40),
    });
  }
  return { model: 'toy', messages, tools, max_tokens: 16 };
}

async function streamRate(t: Target, concurrency: number, ms: number): Promise<Rate> {
  let tokens = 0;
  let calls = 0;
  const t0 = performance.now();
  const end = t0 + ms;
  const long = 'x'.repeat(1000);
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < end) {
        const r = await call(t, '/chat/completions', chat(long, { max_tokens: 2000, stream: true }));
        tokens += r.tokens;
        calls++;
      }
    }),
  );
  return { rate: tokens / ((performance.now() - t0) / 1000), calls, tokens };
}

/**
 * What the other parts did while each target was measured, per `unit` (request, token): the backend's
 * and this client's CPU, and the machine's idle share. The proxy asks the backend for token ids and
 * logprobs, which the direct and pass-through calls do not: the backend's own work differs by target.
 */
const around = (unit: string, per: (m: Measured) => number, ms: Record<string, Measured>) => {
  const out: Record<string, number> = {};
  for (const [name, m] of Object.entries(ms)) {
    if (name !== 'direct') out[`backend_cpu_us_per_${unit}_${name}`] = round(m.backendCpuUs / per(m), 1);
    out[`client_cpu_us_per_${unit}_${name}`] = round(m.clientCpuUs / per(m), 1);
    out[`machine_idle_share_${name}`] = round(m.idleShare, 2);
  }
  return out;
};
/** One target's run: its rate, its process's CPU, and the others' beside it (see `measured`). */
interface Measured extends Rate {
  cpuUs: number;
  backendCpuUs: number;
  clientCpuUs: number;
  idleShare: number;
}

/** The pass-throughs' and each proxy's figure as ratios to direct and to the pass-throughs. */
const ratios = (direct: number, pass: number, tokenPass: number, proxy: number) => ({
  ratio: round(proxy / direct),
  passthrough_ratio: round(pass / direct),
  ratio_to_passthrough: round(proxy / pass),
  token_passthrough_ratio: round(tokenPass / direct),
  ratio_to_token_passthrough: round(proxy / tokenPass),
});

const PG_SCHEMA = `bench_proxy_${process.pid}`;
const PG_BASELINE_SCHEMA = `${PG_SCHEMA}_baseline`;

/**
 * A detached worktree of the project at `rev` (sharing this checkout's node_modules), for a baseline
 * proxy; its bench/servers/proxy.ts must exist (commits from bb74869 on).
 */
function checkoutAt(rev: string): string {
  const tree = mkdtempSync(join(tmpdir(), 'harness-rl-baseline-'));
  execFileSync('git', ['worktree', 'add', '--detach', '--force', tree, rev], { cwd: root, stdio: 'ignore' });
  if (!existsSync(join(tree, 'bench/servers/proxy.ts'))) {
    execFileSync('git', ['worktree', 'remove', '--force', tree], { cwd: root });
    throw new Error(`BENCH_BASELINE ${rev} has no bench/servers/proxy.ts (take a commit from bb74869 on)`);
  }
  symlinkSync(join(root, 'node_modules'), join(tree, 'node_modules'));
  return tree;
}

/** The V8 flags the daemon ran with at that checkout (none before daemon/cli/node-flags.ts existed). */
async function daemonNodeFlagsAt(tree: string): Promise<string[]> {
  const file = join(tree, 'daemon/cli/node-flags.ts');
  if (!existsSync(file)) return [];
  const flags: unknown = (await import(pathToFileURL(file).href)).DAEMON_NODE_FLAGS;
  if (!Array.isArray(flags) || !flags.every((f) => typeof f === 'string'))
    throw new Error(`${file}: DAEMON_NODE_FLAGS is not a list of strings`);
  return flags;
}

interface Proxied {
  /** sqlite, postgres, or <store>@<rev> for BENCH_BASELINE's build. */
  store: string;
  target: Target;
  proc: Awaited<ReturnType<typeof child>>['proc'];
  profileDir: string | null;
  /** Monotonic µs windows of its measured phases, for proxy.profile. */
  windows: { phase: string; from: number; to: number; calls: number }[];
  /** Its rollouts for proxy.conversation (a baseline from before they existed has none). */
  conversations: Conversations | null;
}

interface Conversations {
  origin: string;
  bridged: (Target & { id: string })[];
  native: (Target & { id: string })[];
}

const CONVERSATIONS = 16;
const conversationsOf = (info: Record<string, unknown>): Conversations | null =>
  info.conversations
    ? { origin: String(info.origin), ...(info.conversations as Omit<Conversations, 'origin'>) }
    : null;

/**
 * An agent's conversation, over and over until `end`: 12 turns, each resending the history with the
 * last answer and a tool result appended (the bridge reuses the sampled tokens when it may). The calls made.
 */
async function converse(t: Target, end: number): Promise<number> {
  let calls = 0;
  while (performance.now() < end) {
    const messages: object[] = [
      { role: 'system', content: 'You are a careful coding agent. '.repeat(40) },
      { role: 'user', content: 'Fix the failing test in src/parser.ts.' },
    ];
    for (let turn = 0; turn < 12 && performance.now() < end; turn++) {
      const answer = await postJson(agent, `${t.base}/chat/completions`, t.key, {
        model: 'toy',
        messages,
        max_tokens: 16,
      });
      calls++;
      messages.push(
        { role: 'assistant', content: answer.choices[0].message.content },
        { role: 'user', content: `export const line${turn} = ${turn};\n`.repeat(40) },
      );
    }
  }
  return calls;
}

/** The figures issue #38 sets against the token pass-through, as this run measured them. */
interface Goals {
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
function emitGoals(store: string, g: Goals): void {
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

export default async function main(): Promise<void> {
  const fake = await child(FAKE);
  // BENCH_PROFILE=dir writes a CPU profile of each proxy process under dir/<store>, and of the
  // pass-through under dir/passthrough (its stages are the floor for the proxy's).
  const profile = process.env.BENCH_PROFILE;
  const passProfile = profile ? join(profile, 'passthrough') : null;
  if (passProfile) mkdirSync(passProfile, { recursive: true });
  const pass = await child(
    PASSTHROUGH,
    { BACKEND: fake.info.url },
    passProfile ? ['--cpu-prof', `--cpu-prof-dir=${passProfile}`] : [],
  );
  const passWindows: Proxied['windows'] = [];
  const tokenPass = await child(PASSTHROUGH, { BACKEND: fake.info.url, TOKENS: '1' });
  const stores: ('sqlite' | 'postgres' | 'sqlite-unrecorded')[] = ['sqlite'];
  const pgProblem = await postgresProblem();
  if (pgProblem === null) stores.push('postgres');
  else process.stderr.write(`proxy bench: no PostgreSQL figures (${pgProblem})\n`);
  if (process.env.BENCH_UNRECORDED === '1') stores.push('sqlite-unrecorded');
  const proxies: Proxied[] = [];
  for (const store of stores) {
    const profileDir = profile ? join(profile, store) : null;
    if (profileDir) mkdirSync(profileDir, { recursive: true });
    const spec = store === 'postgres' ? pgSchemaUrl(PG_SCHEMA) : 'sqlite';
    const p = await bundledChild(
      'servers/proxy.ts',
      {
        BACKEND: fake.info.url,
        STORE: spec,
        CONVERSATIONS: String(CONVERSATIONS),
        MODEL_FILES: fake.info.modelDir,
        RECORD: store === 'sqlite-unrecorded' ? 'off' : 'on',
      },
      [...DAEMON_NODE_FLAGS, ...(profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : [])],
    );
    proxies.push({
      store,
      target: { base: p.info.url, key: p.info.key },
      proc: p.proc,
      profileDir,
      windows: [],
      conversations: conversationsOf(p.info),
    });
  }
  // BENCH_BASELINE=<git rev>: that commit's proxy measured beside this checkout's, on each store,
  // phase by phase in the same run: on a shared machine the only comparison a change can be judged by.
  const baseline = process.env.BENCH_BASELINE;
  const baselineTree = baseline ? checkoutAt(baseline) : null;
  // The baseline runs with its own flags, so that a change of DAEMON_NODE_FLAGS is measured too.
  const baselineFlags = baselineTree ? await daemonNodeFlagsAt(baselineTree) : [];
  if (baseline && baselineTree)
    for (const store of stores.filter((s) => s !== 'sqlite-unrecorded')) {
      const spec = store === 'sqlite' ? 'sqlite' : pgSchemaUrl(PG_BASELINE_SCHEMA);
      const p = await bundledChild(
        'servers/proxy.ts',
        {
          BACKEND: fake.info.url,
          STORE: spec,
          CONVERSATIONS: String(CONVERSATIONS),
          // the same model files as this checkout's proxy: else its bridge asks the backend's /tokenize
          MODEL_FILES: fake.info.modelDir,
        },
        baselineFlags,
        baselineTree,
      );
      proxies.push({
        store: `${store}@${baseline}`,
        target: { base: p.info.url, key: p.info.key },
        proc: p.proc,
        profileDir: null,
        windows: [],
        conversations: conversationsOf(p.info),
      });
    }
  const direct: Target = { base: fake.info.url, key: 'none' };
  const floor: Target = { base: pass.info.url, key: 'none' };
  const tokenFloor: Target = { base: tokenPass.info.url, key: 'none' };
  const load = () => ({ loadavg_1m: round(loadavg()[0], 2), cores: cpus().length });
  const goals = new Map<string, Goals>(proxies.map((p) => [p.store, {}]));
  try {
    const all = [direct, floor, tokenFloor, ...proxies.map((p) => p.target)];
    // Warm up every path (JIT, keep-alive sockets, the proxy's caches).
    await latencies(all, 200, chat('warm up'), 'total');
    await latencies(all, 50, chat('warm up', { stream: true }), 'first');

    // BENCH_ONLY=overhead,throughput,agent,stream,conversation runs a subset (profiling).
    const only = (process.env.BENCH_ONLY ?? 'overhead,throughput,agent,stream,conversation').split(',');
    const n = Number(process.env.BENCH_N ?? 1000);
    for (const mode of only.includes('overhead') ? (['nonstream', 'stream_ttft'] as const) : []) {
      const body =
        mode === 'nonstream' ? chat('how much does the proxy add?') : chat('ttft please', { stream: true });
      const procs = [tokenPass.proc, ...proxies.map((p) => p.proc)];
      const cpu0 = procs.map(cpuOf);
      const [d, f, tf, ...ps] = await latencies(all, n, body, mode === 'nonstream' ? 'total' : 'first');
      // CPU per lone call: each process serves only its own target's calls in this phase
      const [tokenCpu, ...proxyCpu] = procs.map((proc, i) => round((cpuOf(proc) - cpu0[i]) / n, 1));
      const [d50, d99, f50, f99] = [quantile(d, 0.5), quantile(d, 0.99), quantile(f, 0.5), quantile(f, 0.99)];
      const [t50, t99] = [quantile(tf, 0.5), quantile(tf, 0.99)];
      for (const [i, p] of proxies.entries()) {
        const [p50, p99] = [quantile(ps[i], 0.5), quantile(ps[i], 0.99)];
        if (mode === 'nonstream') (goals.get(p.store) as Goals).p50 = round(p50 - t50);
        emit('proxy.overhead', {
          mode,
          store: p.store,
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

    const seconds = Number(process.env.BENCH_SECONDS ?? 4) * 1000;
    /**
     * Runs `fn` against the target of `proc`, with that process's CPU time over it, the backend's and
     * this client's beside it, and the share of the machine's CPU time nobody used (near 0: the figure
     * is the machine's; well above: a pipeline stall, not CPU, bounds it).
     */
    const measured = async (
      proc: Proxied['proc'],
      fn: () => Promise<Rate>,
      window?: Proxied['windows'],
      phase = '',
    ) => {
      const c0 = cpuOf(proc);
      const b0 = proc === fake.proc ? 0 : cpuOf(fake.proc);
      const u0 = process.cpuUsage();
      const m0 = machineTimes();
      const from = monotonicUs();
      const r = await fn();
      window?.push({ phase, from, to: monotonicUs(), calls: r.calls });
      const u = process.cpuUsage(u0);
      const m = machineTimes();
      return {
        ...r,
        cpuUs: cpuOf(proc) - c0,
        backendCpuUs: proc === fake.proc ? 0 : cpuOf(fake.proc) - b0,
        clientCpuUs: u.user + u.system,
        idleShare: (m.idle - m0.idle) / (m.total - m0.total),
      };
    };
    // BENCH_ROUNDS=k: each phase measures every target k times, in a rotating order; rates are the
    // median round, CPU per call over all rounds.
    const roundsOf = Number(process.env.BENCH_ROUNDS ?? 1);
    const inRounds = async (
      runs: {
        proc: Proxied['proc'];
        fn: () => Promise<Rate>;
        window?: Proxied['windows'];
        /** The window's phase name when not the phase's (proxy.profile). */
        phase?: string;
      }[],
      phase: string,
    ): Promise<Measured[]> => {
      const all: Measured[][] = runs.map(() => []);
      for (let r = 0; r < roundsOf; r++)
        for (let k = 0; k < runs.length; k++) {
          const i = (k + r) % runs.length;
          all[i].push(await measured(runs[i].proc, runs[i].fn, runs[i].window, runs[i].phase ?? phase));
        }
      return all.map((list) => ({
        rate: quantile(
          list.map((m) => m.rate),
          0.5,
        ),
        calls: list.reduce((a, m) => a + m.calls, 0),
        tokens: list.reduce((a, m) => a + m.tokens, 0),
        cpuUs: list.reduce((a, m) => a + m.cpuUs, 0),
        backendCpuUs: list.reduce((a, m) => a + m.backendCpuUs, 0),
        clientCpuUs: list.reduce((a, m) => a + m.clientCpuUs, 0),
        idleShare: list.reduce((a, m) => a + m.idleShare, 0) / list.length,
      }));
    };
    /** Every target (direct, both pass-throughs, each proxy) driven by `drive`, in rounds. */
    const eachTarget = (phase: string, drive: (t: Target) => Promise<Rate>) =>
      inRounds(
        [
          { proc: fake.proc, fn: () => drive(direct) },
          { proc: pass.proc, fn: () => drive(floor), window: passWindows },
          { proc: tokenPass.proc, fn: () => drive(tokenFloor) },
          ...proxies.map((p) => ({ proc: p.proc, fn: () => drive(p.target), window: p.windows })),
        ],
        phase,
      );
    /** Non-streamed calls of `body` at `conc` clients: proxy, pass-through and direct rates and CPU. */
    const callsPhase = async (bench: string, phase: string, conc: number, body: object) => {
      const [d, f, tf, ...xs] = await eachTarget(phase, (t) => throughput(t, conc, seconds, body));
      for (const [i, p] of proxies.entries()) {
        const x = xs[i];
        if (bench === 'proxy.throughput') (goals.get(p.store) as Goals).calls = round(x.rate / tf.rate);
        emit(bench, {
          store: p.store,
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
    };
    if (only.includes('throughput'))
      await callsPhase('proxy.throughput', 'throughput', 64, chat('throughput'));
    if (only.includes('agent')) await callsPhase('proxy.agent', 'agent', 16, agentCall());
    if (only.includes('stream')) {
      const [d, f, tf, ...xs] = await eachTarget('stream', (t) => streamRate(t, 8, seconds));
      for (const [i, p] of proxies.entries()) {
        const x = xs[i];
        (goals.get(p.store) as Goals).stream = round(x.rate / tf.rate);
        emit('proxy.stream', {
          store: p.store,
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
    if (only.includes('conversation')) {
      // Every proxy's bridged and native rollouts in the same rounds (rotating order, BENCH_ROUNDS): a
      // change is judged against BENCH_BASELINE's build minute by minute, not phase after phase.
      const withConversations = proxies.filter((p) => p.conversations?.bridged.length);
      const converseAll = async (targets: Conversations['bridged']): Promise<Rate> => {
        const end = performance.now() + seconds;
        const calls = (await Promise.all(targets.map((t) => converse(t, end)))).reduce((a, b) => a + b, 0);
        return { rate: (calls * 1000) / seconds, calls, tokens: 0 };
      };
      const results = await inRounds(
        withConversations.flatMap((p) => {
          const c = p.conversations as Conversations;
          return [
            {
              proc: p.proc,
              fn: () => converseAll(c.bridged),
              window: p.windows,
              phase: 'conversation_bridged',
            },
            {
              proc: p.proc,
              fn: () => converseAll(c.native),
              window: p.windows,
              phase: 'conversation_native',
            },
          ];
        }),
        'conversation',
      );
      for (const [i, p] of withConversations.entries()) {
        const c = p.conversations as Conversations;
        const [bridged, native] = [results[2 * i], results[2 * i + 1]];
        const ids = c.bridged.map((t) => t.id).join(',');
        const sources = (await (
          await fetch(`${c.origin}/bench/token-sources?rollouts=${ids}`)
        ).json()) as Record<string, number>;
        const all = Object.values(sources).reduce((a, b) => a + b, 0);
        const goal = goals.get(p.store) as Goals;
        goal.bridged = round(bridged.cpuUs / bridged.calls, 0);
        goal.native = round(native.cpuUs / native.calls, 0);
        emit('proxy.conversation', {
          store: p.store,
          conversations: CONVERSATIONS,
          rounds: roundsOf,
          bridged_rps: round(bridged.rate, 1),
          native_rps: round(native.rate, 1),
          bridged_cpu_us_per_call: round(bridged.cpuUs / bridged.calls, 0),
          native_cpu_us_per_call: round(native.cpuUs / native.calls, 0),
          bridged_share: round((sources.bridge ?? 0) / (all || 1)),
          ...load(),
        });
      }
    }
  } finally {
    /** Signals `proc` and resolves once it has exited (a proxy closes its store on SIGINT). */
    const stopped = (proc: Proxied['proc'], signal: NodeJS.Signals) => {
      const exited = new Promise((resolve) => proc.once('exit', resolve));
      proc.kill(signal);
      return exited;
    };
    await Promise.all([
      ...proxies.map((p) => stopped(p.proc, 'SIGINT')),
      stopped(pass.proc, 'SIGTERM'),
      stopped(tokenPass.proc, 'SIGTERM'),
    ]);
    fake.proc.kill();
    if (stores.includes('postgres')) {
      await dropPgSchema(PG_SCHEMA);
      if (baselineTree) await dropPgSchema(PG_BASELINE_SCHEMA);
    }
    if (baselineTree) execFileSync('git', ['worktree', 'remove', '--force', baselineTree], { cwd: root });
    agent.destroy();
  }
  for (const [store, g] of goals) emitGoals(store, g);
  if (passProfile)
    for (const w of passWindows)
      emit('proxy.profile', {
        target: 'passthrough',
        phase: w.phase,
        calls: w.calls,
        ...stagesPerCall(newestProfile(passProfile), w.from, w.to, w.calls),
      });
  for (const p of proxies)
    if (p.profileDir)
      for (const w of p.windows)
        emit('proxy.profile', {
          target: 'proxy',
          store: p.store,
          phase: w.phase,
          calls: w.calls,
          ...stagesPerCall(newestProfile(p.profileDir), w.from, w.to, w.calls),
        });
}
