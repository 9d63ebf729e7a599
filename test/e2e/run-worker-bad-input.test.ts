// Bad input from a harness or a verifier command: one that crashes, hangs (killed at the deadline, even
// when it ignores SIGTERM), prints no reward or a malformed one fails its attempt with a reason that says
// which, and the run goes on to its last step on the rollouts that worked.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { run as worker } from '../../daemon/cli/commands/worker';
import type { Run } from '../../daemon/protocol/entities';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon';
import { alive } from '../helpers/process';

// What a misbehaving command does, by the task's `mode`, after one chat call through the proxy.
const MISBEHAVE = `
const mode = process.argv[2] === 'verifier'
  ? JSON.parse(require('node:fs').readFileSync(0, 'utf8')).task.mode
  : JSON.parse(process.env.HARNESS_RL_TASK).mode;
const role = process.argv[2];
async function main() {
  if (role === 'harness') {
    const res = await fetch(process.env.OPENAI_BASE_URL + '/chat/completions', {
      method: 'POST',
      headers: { authorization: 'Bearer ' + process.env.OPENAI_API_KEY, 'content-type': 'application/json' },
      body: JSON.stringify({ model: process.env.HARNESS_RL_MODEL, max_tokens: 2, messages: [{ role: 'user', content: 'hi' }] }),
    });
    if (!res.ok) { console.error('llm call failed', res.status); process.exit(1); }
  }
  // In the verifier run the harness always behaves; in the harness run there is no verifier.
  const acting = process.env.ACTING === role ? mode : 'ok';
  switch (acting) {
    case 'ok': console.log(JSON.stringify({ reward: 1 })); break;
    case 'crash': console.error('Traceback: boom in ' + role); process.exit(7);
    case 'hang':
      require('node:fs').writeFileSync('pid-' + role + '-' + process.env.HARNESS_RL_ROLLOUT_ID, String(process.pid));
      process.on('SIGTERM', () => console.error('ignoring SIGTERM'));
      setInterval(() => {}, 1000);
      break;
    case 'silent': console.log('all done'); break;
    case 'malformed': console.log('{"reward": "high"}'); break;
  }
}
main();
`;

const MODES = ['ok', 'crash', 'hang', 'silent', 'malformed'] as const;
// Long enough for ten harness processes at once on a busy 2-core machine.
const TIMEOUT_S = 10;

describe('a harness or verifier that misbehaves', () => {
  let daemon: TestDaemon;
  let dir: string;
  beforeAll(async () => {
    daemon = await startTestDaemon();
    dir = await mkdtemp(join(tmpdir(), 'harness-rl-bad-input-'));
    await writeFile(join(dir, 'misbehave.cjs'), MISBEHAVE);
    await writeFile(
      join(dir, 'tasks.jsonl'),
      MODES.map((mode) => JSON.stringify({ id: mode, mode })).join('\n'),
    );
  });
  afterAll(async () => {
    await daemon?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  /** Runs 2 steps of every task (2 rollouts each, one attempt) with the misbehaving `acting` command. */
  async function runAll(acting: 'harness' | 'verifier'): Promise<Run> {
    const node = (role: string) => [process.execPath, 'misbehave.cjs', role];
    const config = {
      name: `bad ${acting}`,
      tasks: { file: 'tasks.jsonl' },
      harness: {
        workers: 'external',
        command: node('harness'),
        concurrency: 10,
        timeout_s: TIMEOUT_S,
        max_attempts: 1,
        infrastructure_retries: 0,
        ...(acting === 'verifier' ? { reward: 'verifier', verifier: node('verifier') } : {}),
      },
      algorithm: { n: 2 },
      schedule: { steps: 2, groups_per_step: MODES.length },
    };
    const res = await daemon.api<Run>('POST', '/api/runs', { config, base_dir: dir });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    process.env.ACTING = acting;
    try {
      expect(await worker(['--run', res.body.id, '--url', daemon.url, '--token', daemon.token])).toBe(0);
    } finally {
      delete process.env.ACTING;
    }
    return res.body;
  }

  /** task id → the [status, error] of each of its attempts, and the rollouts' rewards. */
  async function outcomes(run: Run) {
    const rollouts = (await daemon.ctx.store.listRollouts({ run_id: run.id })).items;
    const byTask = new Map<
      string,
      { attempts: [string, string | null][]; rewards: (number | null)[]; failures: string[] }
    >();
    for (const r of rollouts) {
      const task = (r.input as { mode: string }).mode;
      const entry = byTask.get(task) ?? { attempts: [], rewards: [], failures: [] };
      for (const a of await daemon.ctx.store.listAttempts(r.id)) {
        entry.attempts.push([a.status, a.error]);
        entry.failures.push(a.failure ? `${a.failure.kind}:${a.failure.reason}` : 'none');
      }
      entry.rewards.push(r.reward);
      byTask.set(task, entry);
    }
    return { rollouts, byTask };
  }

  async function expectKilled(role: string, run: Run) {
    const { byTask } = await outcomes(run);
    expect(byTask.get('hang')!.attempts).toHaveLength(4);
    const rollouts = (await daemon.ctx.store.listRollouts({ run_id: run.id })).items.filter(
      (r) => (r.input as { mode: string }).mode === 'hang',
    );
    for (const r of rollouts) {
      const pid = Number(await readFile(join(dir, `pid-${role}-${r.id}`), 'utf8'));
      await expect.poll(() => alive(pid), { timeout: 10_000 }).toBe(false);
    }
  }

  it('a harness: each attempt says why it failed, and the run trains its steps on the rest', async () => {
    const run = await runAll('harness');
    expect(await daemon.ctx.store.getRun(run.id)).toMatchObject({ status: 'finished', step: 2 });
    const { rollouts, byTask } = await outcomes(run);
    expect(rollouts).toHaveLength(2 * 2 * MODES.length);
    const only = (task: string) => [...new Set(byTask.get(task)!.attempts.map((a) => JSON.stringify(a)))];
    expect(only('ok')).toEqual([JSON.stringify(['succeeded', null])]);
    expect(byTask.get('ok')!.rewards).toEqual([1, 1, 1, 1]);
    expect(only('crash')).toEqual([
      JSON.stringify(['failed', 'harness exit code 7: Traceback: boom in harness']),
    ]);
    // The worker's deadline, or the scheduler's sweep when it comes first: the same limit either way.
    for (const [status, error] of byTask.get('hang')!.attempts) {
      expect(status).toBe('timed_out');
      expect(error).toMatch(new RegExp(`^(timed out|no result) after ${TIMEOUT_S}s$`));
    }
    expect(only('silent')).toEqual([
      JSON.stringify([
        'failed',
        'harness printed no reward and posted none: its last stdout line must be {"reward": x} with x a finite number, not "all done"',
      ]),
    ]);
    expect(only('malformed')).toEqual([
      JSON.stringify([
        'failed',
        'harness printed no reward and posted none: its last stdout line must be {"reward": x} with x a finite number, not "{\\"reward\\": \\"high\\"}"',
      ]),
    ]);
    for (const task of ['crash', 'hang', 'silent', 'malformed'])
      expect(byTask.get(task)!.rewards).toEqual([null, null, null, null]);
    // Why each failed: the harness's own failures, and the deadline (infrastructure).
    const why = (task: string) => [...new Set(byTask.get(task)!.failures)];
    expect(why('ok')).toEqual(['none']);
    expect(why('crash')).toEqual(['harness:exit']);
    expect(why('hang')).toEqual(['infrastructure:deadline']);
    expect(why('silent')).toEqual(['harness:no_reward']);
    expect(why('malformed')).toEqual(['harness:no_reward']);
    await expectKilled('harness', run);
  });

  it('a verifier: each attempt says why it failed, and the run trains its steps on the rest', async () => {
    const run = await runAll('verifier');
    expect(await daemon.ctx.store.getRun(run.id)).toMatchObject({ status: 'finished', step: 2 });
    const { byTask } = await outcomes(run);
    const only = (task: string) => [...new Set(byTask.get(task)!.attempts.map((a) => JSON.stringify(a)))];
    expect(only('ok')).toEqual([JSON.stringify(['succeeded', null])]);
    expect(byTask.get('ok')!.rewards).toEqual([1, 1, 1, 1]);
    expect(only('crash')).toEqual([
      JSON.stringify(['failed', 'verifier failed: exit code 7: Traceback: boom in verifier']),
    ]);
    expect(only('hang')).toEqual([JSON.stringify(['failed', `verifier timed out after ${TIMEOUT_S}s`])]);
    expect(only('silent')).toEqual([
      JSON.stringify([
        'failed',
        'verifier failed: printed no reward: its last stdout line must be {"reward": x} or a number x, not "all done"',
      ]),
    ]);
    expect(only('malformed')).toEqual([
      JSON.stringify([
        'failed',
        'verifier failed: printed no reward: its last stdout line must be {"reward": x} or a number x, not "{\\"reward\\": \\"high\\"}"',
      ]),
    ]);
    for (const task of ['crash', 'hang', 'silent', 'malformed'])
      expect(byTask.get(task)!.rewards).toEqual([null, null, null, null]);
    const why = (task: string) => [...new Set(byTask.get(task)!.failures)];
    expect(why('crash')).toEqual(['harness:verifier']);
    expect(why('hang')).toEqual(['infrastructure:deadline']);
    expect(why('silent')).toEqual(['harness:verifier']);
    await expectKilled('verifier', run);
  });
});
