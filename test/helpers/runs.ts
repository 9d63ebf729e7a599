// Runs in the e2e tests: a chat harness whose live processes can be counted and held back, and
// waiting for a run to finish.
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Run } from '../../daemon/protocol/entities';
import type { TestDaemon } from './daemon';
import { alive } from './process';
import { waitFor } from './wait';

/**
 * A harness (an .mjs file) of one chat call through the proxy, rewarded its answer's length mod 2. Its
 * pid is in pids/ while it runs; it waits while the file `hold` exists.
 */
export const HELD_CHAT_HARNESS = `
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
mkdirSync('pids', { recursive: true });
writeFileSync('pids/' + process.pid, '');
console.error('harness on stderr');
while (existsSync('hold')) await new Promise((r) => setTimeout(r, 100));
const res = await fetch(process.env.OPENAI_BASE_URL + '/chat/completions', {
  method: 'POST',
  headers: { authorization: 'Bearer ' + process.env.OPENAI_API_KEY, 'content-type': 'application/json' },
  body: JSON.stringify({ model: process.env.HARNESS_RL_MODEL, max_tokens: 3,
    messages: [{ role: 'user', content: process.env.HARNESS_RL_TASK }] }),
});
if (!res.ok) { console.error('chat failed', res.status, await res.text()); process.exit(3); }
const text = (await res.json()).choices[0].message.content ?? '';
rmSync('pids/' + process.pid, { force: true });
console.log(JSON.stringify({ reward: text.length % 2 }));
`;

/** The pids of the HELD_CHAT_HARNESS processes of run folder `dir` that still run. */
export const harnessPids = (dir: string) =>
  existsSync(join(dir, 'pids'))
    ? readdirSync(join(dir, 'pids'))
        .map(Number)
        .filter((p) => alive(p))
    : [];

/** The run once it finished; throws when it fails, or when it has not finished in `ms`. */
export const runFinished = (daemon: TestDaemon, id: string, ms = 60_000): Promise<Run> =>
  waitFor(
    `run ${id} to finish`,
    async () => {
      const run = await daemon.ctx.store.getRun(id);
      if (run?.status === 'failed') throw new Error(`the run failed: ${run.error}`);
      return run?.status === 'finished' ? run : null;
    },
    ms,
  );
