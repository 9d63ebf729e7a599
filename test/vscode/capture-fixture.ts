// Captures a real rollout for the webview tests: runs the demo (reference engine, math agent) for one
// step, then saves one succeeded rollout as GET /api/rollouts/:id returns it, with its group siblings'
// rewards, to extension/src/fixtures/rollout.json.   npx tsx test/vscode/capture-fixture.ts
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runDemo } from '../../daemon/cli/commands/demo';
import { startDaemon } from '../../daemon/daemon';

const root = fileURLToPath(new URL('../..', import.meta.url));
const dataDir = mkdtempSync(join(tmpdir(), 'harness-rl-capture-'));
await runDemo({ steps: 1, dataDir, write: () => {} });
const daemon = await startDaemon({ dataDir, port: 0 });
// biome-ignore lint/suspicious/noExplicitAny: a one-off script reads response bodies loosely
const get = async (path: string): Promise<any> =>
  (await fetch(`${daemon.url}${path}`, { headers: { authorization: `Bearer ${daemon.token}` } })).json();
try {
  const page = await get('/api/rollouts?status=succeeded&limit=100');
  let best: { group_id: string; llm_calls: unknown[] } | null = null;
  for (const r of page.items) {
    const d = await get(`/api/rollouts/${r.id}`);
    if (!best || d.llm_calls.length > best.llm_calls.length) best = d;
  }
  if (!best) throw new Error('the demo produced no succeeded rollout');
  const group = await get(`/api/groups/${best.group_id}`);
  const out = join(root, 'extension', 'src', 'fixtures');
  mkdirSync(out, { recursive: true });
  writeFileSync(join(out, 'rollout.json'), `${JSON.stringify(best, null, 1)}\n`);
  writeFileSync(
    join(out, 'group.json'),
    `${JSON.stringify(
      group.rollouts.map((r: { id: string; group_id: string; reward: number | null }) => ({
        id: r.id,
        group_id: r.group_id,
        reward: r.reward,
      })),
      null,
      1,
    )}\n`,
  );
  process.stdout.write(`captured rollout with ${best.llm_calls.length} llm calls into ${out}\n`);
} finally {
  await daemon.close();
}
