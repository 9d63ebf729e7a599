// The shipped daemon's resident memory (issue #38): `harness-rl daemon` from the CLI bundle (dist/cli.js,
// built first), SQLite store, fake-vllm's toy model as its backend with the model's own tokenizer files
// (config model_files). This process drives it.
//   daemon.rss  idle_mb: the daemon's RSS once started and idle (nothing loaded a call would need);
//               after_calls_mb: after BENCH_CALLS (10,000) calls, 16 agent conversations at a time on
//               rollouts with the token bridge (12 turns each, resending the history), all finished;
//               what bounds the difference: the toy tokenizer (loaded on the first bridged call),
//               the bridge's memory (256 MB budget, emptied as rollouts finish), the V8 heap's growth
//               under --max-semi-space-size=128 (BENCH_DAEMON_FLAGS="": Node's defaults);
//               bound_mb: idle + the per-rollout caches' budgets (CACHE_BUDGETS_MIB) + the young
//               generation's two semi-spaces at their largest, and whether after_calls_mb stays within
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { Agent } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DAEMON_NODE_FLAGS } from '../daemon/cli/node-flags';
import { postJson } from './client';
import { child, emit, root, round } from './emit';

const FAKE = `
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startFakeVllm } from '${root}test/fixtures/fake-vllm.ts';
import { writeToyModelFolder } from '${root}test/fixtures/toy-model.ts';
const f = await startFakeVllm({ model: 'toy', maxProduced: 16 });
const modelDir = writeToyModelFolder(join(mkdtempSync(join(tmpdir(), 'harness-rl-bench-toy-')), 'toy'));
process.stdout.write(JSON.stringify({ url: f.url, modelDir }) + '\\n');
`;

/** The budgets (MiB) of the caches that hold per-rollout entries, as their files declare them. */
const CACHE_BUDGETS_MIB = {
  bridge: 256, // proxy/bridge.ts BRIDGE_BUDGET_BYTES
  chain_bases: 96, // store/sql/call-chain.ts BUDGET_BYTES
  prompt_ids: 64, // proxy/prompt-ids.ts PROMPT_IDS_BUDGET_BYTES
  scopes: 32 + 16 + 1, // proxy/scope.ts SCOPES_, RUNS_, KEYED_BUDGET_BYTES
  affinity: 8, // proxy/backends.ts AFFINITY_BUDGET_BYTES
  event_runs: 4, // api/events.ts RUN_OF_ROLLOUT_BUDGET_BYTES
  claims: 2, // api/workers.ts CLAIMS_BUDGET_BYTES
};

/** The young generation's two semi-spaces at their largest under `flags` (Node 20's default: 16 MiB each). */
function youngMb(flags: string[]): number {
  const set = flags.map((f) => /^--max-semi-space-size=(\d+)$/.exec(f)).find(Boolean);
  return 2 * (set ? Number(set[1]) : 16);
}

const rssMb = (pid: number) =>
  Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A daemon API call (not measured): its JSON answer. */
async function api(url: string, token: string, body: object) {
  const res = await fetch(url, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (!res.ok) throw new Error(`${url}: HTTP ${res.status} ${await res.text()}`);
  return (await res.json()) as { id: string; key: string };
}

/**
 * `harness-rl daemon` from the CLI bundle with node `flags`, data in `data`, fake-vllm (`fake`) its
 * backend and the toy model's files its model_files; resolves once it listens, with its origin.
 */
async function startShipped(
  flags: string[],
  fake: Record<string, string>,
  data: string,
  token: string,
): Promise<{ daemon: ChildProcess; origin: string }> {
  const configFile = join(data, 'config.json');
  writeFileSync(configFile, JSON.stringify({ daemon: { model_files: { toy: fake.modelDir } } }));
  const daemon = spawn(
    process.execPath,
    [...flags, join(root, 'dist/cli.js'), 'daemon', '--port', '0', '--data', data, '--token', token].concat([
      '--backend',
      fake.url,
      '--config',
      configFile,
    ]),
    { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const origin = await new Promise<string>((resolve, reject) => {
    let buf = '';
    daemon.stdout?.on('data', (c: Buffer) => {
      buf += c.toString();
      const m = /listening on (http:\/\/\S+)/.exec(buf);
      if (m) resolve(m[1]);
    });
    daemon.once('exit', (code) => reject(new Error(`the daemon exited with ${code}`)));
  });
  return { daemon, origin };
}

/**
 * 16 agent conversations at a time on rollouts with the token bridge (12 turns each, resending the
 * history; each rollout completed after), until `total` calls: the calls made.
 */
async function converse(origin: string, token: string, agent: Agent, total: number): Promise<number> {
  let calls = 0;
  const conversation = async () => {
    while (calls < total) {
      const r = await api(`${origin}/api/rollouts`, token, { tito: true });
      const base = `${origin}/r/${r.id}/v1`;
      const messages: object[] = [
        { role: 'system', content: 'You are a careful coding agent. '.repeat(40) },
        { role: 'user', content: 'Fix the failing test in src/parser.ts.' },
      ];
      for (let turn = 0; turn < 12 && calls < total; turn++) {
        calls++;
        const answer = await postJson(agent, `${base}/chat/completions`, String(r.key), {
          model: 'toy',
          messages,
          max_tokens: 16,
        });
        messages.push(
          { role: 'assistant', content: answer.choices[0].message.content },
          { role: 'user', content: `export const line${turn} = ${turn};\n`.repeat(40) },
        );
      }
      await api(`${origin}/api/rollouts/${r.id}/complete`, token, {});
    }
  };
  await Promise.all(Array.from({ length: 16 }, conversation));
  return calls;
}

export default async function daemonRss(): Promise<void> {
  const total = Number(process.env.BENCH_CALLS ?? 10_000);
  // BENCH_DAEMON_FLAGS: the daemon's node flags instead of DAEMON_NODE_FLAGS ("" for none)
  const given = process.env.BENCH_DAEMON_FLAGS;
  const flags = given === undefined ? DAEMON_NODE_FLAGS : given.split(' ').filter(Boolean);
  execFileSync(process.execPath, ['scripts/build.mjs', '--only=cli'], { cwd: root, stdio: 'inherit' });
  const fake = await child(FAKE);
  const data = mkdtempSync(join(tmpdir(), 'harness-rl-bench-daemon-'));
  const token = 'bench-token';
  const { daemon, origin } = await startShipped(flags, fake.info, data, token);
  const agent = new Agent({ keepAlive: true, maxSockets: 64 });
  try {
    await sleep(3000);
    const idle = rssMb(daemon.pid as number);
    const calls = await converse(origin, token, agent, total);
    await sleep(3000);
    const after = rssMb(daemon.pid as number);
    const bound = idle + Object.values(CACHE_BUDGETS_MIB).reduce((a, b) => a + b, 0) + youngMb(flags);
    emit('daemon.rss', {
      idle_mb: round(idle, 1),
      idle_goal: '<= 100 MB',
      idle_met: idle <= 100,
      after_calls_mb: round(after, 1),
      calls,
      bound_mb: round(bound, 0),
      within_bound: after <= bound,
      node_flags: flags.join(' '),
    });
  } finally {
    const exited = new Promise((r) => daemon.once('exit', r));
    daemon.kill('SIGINT');
    await exited;
    fake.proc.kill();
    agent.destroy();
    rmSync(data, { recursive: true, force: true });
  }
}
