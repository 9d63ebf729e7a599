// The proxy bench's targets, each in its own child process: fake-vllm (the backend; direct calls), the
// pass-through and the token pass-through (the floors), this checkout's proxy on each store, and with
// BENCH_BASELINE that commit's proxy beside it; started here, and stopped with their stores' schemas
// and the baseline's checkout.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { DAEMON_NODE_FLAGS } from '../../daemon/cli/node-flags';
import { dropPgSchema, pgSchemaUrl, postgresProblem } from '../../daemon/store/pg-testing';
import type { Target } from '../client';
import { bundledChild, child, root } from '../emit';

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

type Child = Awaited<ReturnType<typeof child>>;
type Store = 'sqlite' | 'postgres' | 'sqlite-unrecorded';

/** Monotonic µs windows of a target's measured phases, for proxy.profile. */
export type Windows = { phase: string; from: number; to: number; calls: number }[];

export interface Conversations {
  origin: string;
  bridged: (Target & { id: string })[];
  native: (Target & { id: string })[];
}

export interface Proxied {
  /** sqlite, postgres, or <store>@<rev> for BENCH_BASELINE's build. */
  store: string;
  target: Target;
  proc: Child['proc'];
  profileDir: string | null;
  windows: Windows;
  /** Its rollouts for proxy.conversation (a baseline from before they existed has none). */
  conversations: Conversations | null;
}

/** Every target of the run, and what stopping them must undo. */
export interface Targets {
  fake: Child;
  pass: Child;
  tokenPass: Child;
  /** The pass-through's CPU profile folder (BENCH_PROFILE) and its phases' windows. */
  passProfile: string | null;
  passWindows: Windows;
  proxies: Proxied[];
  stores: Store[];
  baselineTree: string | null;
  direct: Target;
  floor: Target;
  tokenFloor: Target;
}

export const CONVERSATIONS = 16;
const conversationsOf = (info: Record<string, unknown>): Conversations | null =>
  info.conversations
    ? { origin: String(info.origin), ...(info.conversations as Omit<Conversations, 'origin'>) }
    : null;

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

/** A proxy (servers/proxy.ts, bundled as the daemon is) of `checkout` on `spec`, in front of `fake`. */
async function startProxy(
  fake: Child,
  store: string,
  spec: string,
  env: Record<string, string>,
  flags: string[],
  checkout?: string,
): Promise<Proxied> {
  const p = await bundledChild(
    'servers/proxy.ts',
    {
      BACKEND: fake.info.url,
      STORE: spec,
      CONVERSATIONS: String(CONVERSATIONS),
      // the same model files for every proxy: else a baseline's bridge asks the backend's /tokenize
      MODEL_FILES: fake.info.modelDir,
      ...env,
    },
    flags,
    checkout,
  );
  return {
    store,
    target: { base: p.info.url, key: p.info.key },
    proc: p.proc,
    profileDir: null,
    windows: [],
    conversations: conversationsOf(p.info),
  };
}

/** This checkout's proxy on each store; BENCH_PROFILE=dir profiles each under dir/<store>. */
async function startProxies(fake: Child, stores: Store[], profile: string | undefined): Promise<Proxied[]> {
  const proxies: Proxied[] = [];
  for (const store of stores) {
    const profileDir = profile ? join(profile, store) : null;
    if (profileDir) mkdirSync(profileDir, { recursive: true });
    const spec = store === 'postgres' ? pgSchemaUrl(PG_SCHEMA) : 'sqlite';
    const p = await startProxy(fake, store, spec, { RECORD: store === 'sqlite-unrecorded' ? 'off' : 'on' }, [
      ...DAEMON_NODE_FLAGS,
      ...(profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : []),
    ]);
    proxies.push({ ...p, profileDir });
  }
  return proxies;
}

/**
 * BENCH_BASELINE=<git rev>: that commit's proxy measured beside this checkout's, on each store,
 * phase by phase in the same run: on a shared machine the only comparison a change can be judged by.
 */
async function startBaseline(
  fake: Child,
  stores: Store[],
  baseline: string,
): Promise<{ tree: string; proxies: Proxied[] }> {
  const tree = checkoutAt(baseline);
  // The baseline runs with its own flags, so that a change of DAEMON_NODE_FLAGS is measured too.
  const flags = await daemonNodeFlagsAt(tree);
  const proxies: Proxied[] = [];
  for (const store of stores.filter((s) => s !== 'sqlite-unrecorded')) {
    const spec = store === 'sqlite' ? 'sqlite' : pgSchemaUrl(PG_BASELINE_SCHEMA);
    proxies.push(await startProxy(fake, `${store}@${baseline}`, spec, {}, flags, tree));
  }
  return { tree, proxies };
}

export async function startTargets(): Promise<Targets> {
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
  const tokenPass = await child(PASSTHROUGH, { BACKEND: fake.info.url, TOKENS: '1' });
  const stores: Store[] = ['sqlite'];
  const pgProblem = await postgresProblem();
  if (pgProblem === null) stores.push('postgres');
  else process.stderr.write(`proxy bench: no PostgreSQL figures (${pgProblem})\n`);
  if (process.env.BENCH_UNRECORDED === '1') stores.push('sqlite-unrecorded');
  const proxies = await startProxies(fake, stores, profile);
  const baseline = process.env.BENCH_BASELINE;
  const base = baseline ? await startBaseline(fake, stores, baseline) : null;
  return {
    fake,
    pass,
    tokenPass,
    passProfile,
    passWindows: [],
    proxies: [...proxies, ...(base?.proxies ?? [])],
    stores,
    baselineTree: base?.tree ?? null,
    direct: { base: fake.info.url, key: 'none' },
    floor: { base: pass.info.url, key: 'none' },
    tokenFloor: { base: tokenPass.info.url, key: 'none' },
  };
}

/** Signals `proc` and resolves once it has exited (a proxy closes its store on SIGINT). */
const stopped = (proc: Child['proc'], signal: NodeJS.Signals) => {
  const exited = new Promise((resolve) => proc.once('exit', resolve));
  proc.kill(signal);
  return exited;
};

/** Stops every target, drops the proxies' PostgreSQL schemas and removes the baseline's checkout. */
export async function stopTargets(t: Targets): Promise<void> {
  await Promise.all([
    ...t.proxies.map((p) => stopped(p.proc, 'SIGINT')),
    stopped(t.pass.proc, 'SIGTERM'),
    stopped(t.tokenPass.proc, 'SIGTERM'),
  ]);
  t.fake.proc.kill();
  if (t.stores.includes('postgres')) {
    await dropPgSchema(PG_SCHEMA);
    if (t.baselineTree) await dropPgSchema(PG_BASELINE_SCHEMA);
  }
  if (t.baselineTree) execFileSync('git', ['worktree', 'remove', '--force', t.baselineTree], { cwd: root });
}
