// An evolution interrupted by a daemon stop: the next daemon shows it interrupted, and
// `harness-rl evolve resume` goes on from the stored generation — the root and the child evaluated
// before the stop are not evaluated again, the proposal cut short is asked for again, an evaluation cut
// short (which the next daemon runs over) is waited for, not started anew, and held-out is evaluated
// once per finalist and the root.
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { evolveCommand } from '../../daemon/cli/commands/evolve';
import type { Page } from '../../daemon/protocol/entities';
import type { Evaluation } from '../../daemon/protocol/evaluation';
import type { EvolutionDetail } from '../../daemon/protocol/evolution';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon';
import { evolveBed, exampleRun, tinyEvolve } from '../helpers/evolve';
import { EDITS, EXAMPLE } from '../helpers/math-harness';
import { waitFor } from '../helpers/wait';

// Proposal 0: the retry edit. Proposal 1: the shorter prompt — but the first time it is asked for, it
// says so and hangs until the daemon stops (and kills it).
const PROPOSER = `
import { appendFileSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
const [state, plan] = [process.argv[2], JSON.parse(process.argv[3])];
const { proposal } = JSON.parse(readFileSync(process.env.HARNESS_RL_BRIEF_JSON, 'utf8'));
appendFileSync(join(state, 'proposals'), proposal + '\\n');
if (proposal === 1 && !existsSync(join(state, 'blocked'))) {
  writeFileSync(join(state, 'blocked'), '');
  await new Promise(() => setInterval(() => {}, 1000));
}
let text = readFileSync('agent.mjs', 'utf8');
for (const [from, to] of plan[proposal]) text = text.replace(from, to);
writeFileSync('agent.mjs', text);
`;

// The daemons (two a test, sharing a data folder) are the tests' own.
const bed = evolveBed('evolve-resume', { 'propose.mjs': PROPOSER }, { daemon: false });
const daemons: TestDaemon[] = [];
afterAll(async () => {
  for (const d of daemons) await d.close().catch(() => {});
});

async function evaluationsByName(d: TestDaemon, evolution: string): Promise<Map<string, string[]>> {
  const page = (await d.api<Page<Evaluation>>('GET', '/api/evaluations?limit=200')).body;
  const byName = new Map<string, string[]>();
  for (const e of page.items.filter((x) => x.name.startsWith(`evolve ${evolution} `)))
    byName.set(e.name, [...(byName.get(e.name) ?? []), e.id]);
  return byName;
}

describe('resuming an evolution after a daemon restart', () => {
  it('shows it interrupted, then goes on from the stored generation without evaluating anything twice', async () => {
    const { state } = bed;
    const dataDir = join(state, 'data');
    const first = await startTestDaemon({ dataDir });
    daemons.push(first);
    const proposer = [
      process.execPath,
      join(state, 'propose.mjs'),
      state,
      JSON.stringify([EDITS.retry, EDITS.short]),
    ];
    const config = await exampleRun(12, 0.25, tinyEvolve(proposer, { children: 2 }));
    const started = await first.api('POST', '/api/evolutions', { config, base_dir: EXAMPLE });
    expect(started.status, JSON.stringify(started.body)).toBe(201);
    const id = started.body.id as string;
    await waitFor(
      'the second proposal to start',
      async () => existsSync(join(state, 'blocked')) || null,
      300_000,
    );
    const before = (await first.api<EvolutionDetail>('GET', `/api/evolutions/${id}`)).body;
    const [root, child] = before.candidates;
    expect(root!.parent).toBeNull();
    expect(child!.status).toBe('accepted');
    expect(before.candidates.length).toBe(2);
    await first.close();

    const second = await startTestDaemon({ dataDir });
    daemons.push(second);
    const shown = (await second.api<EvolutionDetail>('GET', `/api/evolutions/${id}`)).body;
    expect(shown.status).toBe('interrupted');
    expect(shown.error).toMatch(/evolve resume/);

    const out: string[] = [];
    const err: string[] = [];
    const code = await evolveCommand(['resume', id, '--url', second.url, '--token', second.token, '--json'], {
      out: (t) => out.push(t),
      err: (t) => err.push(t),
    });
    const after = JSON.parse(out.at(-1)!) as EvolutionDetail;
    expect(code, `${after.error ?? ''} ${err.join('\n')}`).toBe(0);
    expect(after.status).toBe('finished');
    const again = (h: string) => after.candidates.find((c) => c.hash === h)!;
    expect(again(root!.hash).train_evaluation).toBe(root!.train_evaluation);
    expect(again(child!.hash).train_evaluation).toBe(child!.train_evaluation);
    expect(after.candidates.length).toBe(3);
    const third = after.candidates[2]!;
    expect(third.parent).toBe(root!.hash);
    expect(third.status).toMatch(/accepted|pruned/);
    // Each (candidate, split) evaluated once, across both daemons.
    const byName = await evaluationsByName(second, id);
    for (const [name, ids] of byName) expect(ids.length, name).toBe(1);
    expect(byName.get(`evolve ${id} ${root!.hash} train`)).toEqual([root!.train_evaluation]);
    expect(after.result!.held_out_evaluations).toBe(2);
    // Proposals: 0, then 1 (cut short by the stop), then 1 again after the resume.
    expect(readFileSync(join(state, 'proposals'), 'utf8').trim().split('\n')).toEqual(['0', '1', '1']);
  }, 600_000);

  it('waits for the evaluation a stop cut short (the next daemon runs it over) instead of starting another', async () => {
    const data = mkdtempSync(join(tmpdir(), 'harness-rl-evolve-resume-data-'));
    const dir = mkdtempSync(join(tmpdir(), 'harness-rl-evolve-resume-'));
    writeFileSync(join(dir, 'propose.mjs'), PROPOSER);
    writeFileSync(join(dir, 'blocked'), ''); // no proposal hangs here
    const first = await startTestDaemon({ dataDir: data });
    daemons.push(first);
    // The child's harness takes a second a task, so its evaluation is under way when the daemon stops.
    const slow: [string, string][] = [
      ...EDITS.retry,
      ['const MAX_TOKENS = 4;', 'const MAX_TOKENS = 4;\nawait new Promise((r) => setTimeout(r, 1000));'],
    ];
    const config = await exampleRun(
      12,
      0.25,
      tinyEvolve([process.execPath, join(dir, 'propose.mjs'), dir, JSON.stringify([slow])]),
    );
    const id = (await first.api('POST', '/api/evolutions', { config, base_dir: EXAMPLE })).body.id as string;
    const child = await waitFor(
      "the child's evaluation to start",
      async () => {
        const e = (await first.api<EvolutionDetail>('GET', `/api/evolutions/${id}`)).body;
        return e.candidates.find((c) => c.parent !== null && c.status === 'evaluating') ?? null;
      },
      300_000,
    );
    const name = `evolve ${id} ${child.hash} train`;
    const cut = await waitFor('its evaluation to be stored', async () =>
      (await evaluationsByName(first, id)).get(name),
    );
    await first.close();
    expect(cut.length).toBe(1);

    const second = await startTestDaemon({ dataDir: data });
    daemons.push(second);
    expect((await second.api<EvolutionDetail>('GET', `/api/evolutions/${id}`)).body.status).toBe(
      'interrupted',
    );
    const code = await evolveCommand(
      ['--resume', id, '--url', second.url, '--token', second.token, '--json'],
      {
        out: () => {},
        err: () => {},
      },
    );
    const after = (await second.api<EvolutionDetail>('GET', `/api/evolutions/${id}`)).body;
    expect(code, after.error ?? '').toBe(0);
    const resumed = after.candidates.find((c) => c.hash === child.hash)!;
    expect(resumed.status).toBe('accepted');
    expect(resumed.train_evaluation).toBe(cut[0]);
    expect((await evaluationsByName(second, id)).get(name)).toEqual(cut);
    expect(readFileSync(join(dir, 'proposals'), 'utf8').trim().split('\n')).toEqual(['0']);
    for (const d of [data, dir]) rmSync(d, { recursive: true, force: true });
  }, 600_000);
});
