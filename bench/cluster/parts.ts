// The cluster bench's parts, each in its own child process: fake-vllm backends, the inference node
// agents in front of them and the daemon; started here, stopped in reverse (the daemon first).
import type { ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { DAEMON_NODE_FLAGS } from '../../daemon/cli/node-flags';
import { child, root } from '../emit';

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

/** The started parts: their URLs and processes. */
export interface Parts {
  /** The daemon's url and token. */
  daemon: Record<string, string>;
  vllmUrls: string[];
  nodeUrls: string[];
  procs: { daemon: ChildProcess; nodes: ChildProcess; backends: ChildProcess };
}

/**
 * Starts `backends` fake-vllm servers, a node agent in front of each (with `nodeToken`) and the daemon,
 * data under `dir`; each process goes into `started` as soon as it is up, for `stopAll`.
 */
export async function startParts(
  dir: string,
  backends: number,
  nodeToken: string,
  started: ChildProcess[],
): Promise<Parts> {
  const start = async (script: string, env: Record<string, string>, flags: string[] = []) => {
    const c = await child(script, env, flags);
    started.push(c.proc);
    return c;
  };
  // BENCH_PROFILE=dir writes a CPU profile of the daemon and of the node agents there.
  const profile = process.env.BENCH_PROFILE;
  const prof = profile ? ['--cpu-prof', `--cpu-prof-dir=${profile}`] : [];
  const fakes = await start(BACKENDS, { BACKENDS: String(backends) });
  const vllmUrls = fakes.info.urls.split(' ');
  const nodes = await start(
    NODES,
    {
      VLLM_URLS: vllmUrls.join(' '),
      NODE_TOKEN: nodeToken,
      DATA_DIR: join(dir, 'nodes'),
    },
    prof,
  );
  const nodeUrls = nodes.info.urls.split(' ');
  const daemon = await start(DAEMON, { DATA_DIR: join(dir, 'daemon') }, [...DAEMON_NODE_FLAGS, ...prof]);
  return {
    daemon: daemon.info,
    vllmUrls,
    nodeUrls,
    procs: { daemon: daemon.proc, nodes: nodes.proc, backends: fakes.proc },
  };
}

/** The daemon first (it closes its node connections and store), then what it was connected to. */
export async function stopAll(started: ChildProcess[]): Promise<void> {
  for (const p of started.reverse()) {
    const exited = new Promise((r) => p.once('exit', r));
    p.kill('SIGTERM');
    await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
  }
}

/** What each phase is given: the parts, the runs' folder and node token, BENCH_SECONDS in ms. */
export interface Cluster extends Parts {
  dir: string;
  nodeToken: string;
  seconds: number;
}
