// Harness evolution on the reference engine at a fixed model version, with a scripted proposer whose
// edits are, in turn: a good one (a retry on malformed answers), one over the edit budget, one that leaks a
// training task's id, a no-op, a harmful one, one the critic rejects, a cosmetic one (trajectories
// unchanged); then, on the kept candidate, more retries. Each ends as it should, the
// lineage is stored (a candidate's files come back from its patches), the held-out split is evaluated
// once per finalist and the root, and no brief ever names a held-out task.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { splitTasks } from '../../daemon/api/tasks';
import type { Evaluation } from '../../daemon/protocol/evaluation';
import { evolutionEnd, evolveBed, exampleRun } from '../helpers/evolve';
import { EDITS, EXAMPLE } from '../helpers/math-harness';

const EXTRACTION = "  return (text.match(/\\d/) ?? [''])[0];";
const edit = (text: string, edits: readonly (readonly [string, string])[]) =>
  edits.reduce((t, [from, to]) => t.replace(from, to), text);

// The scripted proposer: its n-th call makes the n-th edit; every brief is kept for the test to read.
const PROPOSER = `
import { readFileSync, writeFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
const state = process.argv[2];
const counter = join(state, 'n');
const n = existsSync(counter) ? Number(readFileSync(counter, 'utf8')) + 1 : 0;
writeFileSync(counter, String(n));
const brief = readFileSync(process.env.HARNESS_RL_BRIEF, 'utf8');
writeFileSync(join(state, 'brief-' + n + '.md'), brief);
const plan = JSON.parse(readFileSync(join(state, 'plan.json'), 'utf8'));
const step = plan[n] ?? { kind: 'noop' };
const file = 'agent.mjs';
let text = readFileSync(file, 'utf8');
if (step.kind === 'edits') for (const [from, to] of step.edits) text = text.replace(from, to);
if (step.kind === 'leak') {
  const id = /"id":"([^"]+)"/.exec(brief)[1];
  text = text.replace('console.log(JSON.stringify({ answer }));', "if (task.id === '" + id + "') answer = String(task.answer);\\nconsole.log(JSON.stringify({ answer }));");
}
if (step.kind === 'big') text += Array.from({ length: 60 }, (_, i) => '// padding ' + i).join('\\n') + '\\n';
writeFileSync(file, text);
`;

// The critic: rejects a diff that special-cases anything.
const CRITIC = `
let diff = '';
for await (const c of process.stdin) diff += c;
const bad = /special-case/.test(diff);
console.log(JSON.stringify({ verdict: bad ? 'reject' : 'accept', reason: bad ? 'special-cases an answer' : 'general' }));
`;

const retry = EDITS.retry as [string, string][];
const more: [string, string][] = [['const MAX_TRIES = 4;', 'const MAX_TRIES = 8;']];
const PLAN = [
  { kind: 'edits', edits: retry }, // good
  { kind: 'big' }, // over budget
  { kind: 'leak' },
  { kind: 'noop' },
  { kind: 'edits', edits: [[EXTRACTION, "  return 'x';"]] }, // harmful
  { kind: 'edits', edits: [[EXTRACTION, "  return '5'; // special-case"]] }, // critic
  { kind: 'edits', edits: [['/** What counts as', '/** Which text counts as']] }, // cosmetic
  { kind: 'edits', edits: more }, // generation 2, on the good one
];

const bed = evolveBed('evolve', {
  'plan.json': JSON.stringify(PLAN),
  'propose.mjs': PROPOSER,
  'critic.mjs': CRITIC,
});

describe('evolving the math harness with a scripted proposer', () => {
  it('keeps the good edits, rejects or prunes the others with reasons, and evaluates held-out once', async () => {
    const { daemon, state } = bed;
    const tasks = { file: '../math-agent/tasks.jsonl', shuffle_seed: 0, limit: 40, test_fraction: 0.3 };
    const config = await exampleRun(tasks.limit, tasks.test_fraction, {
      proposer: [process.execPath, join(state, 'propose.mjs'), state],
      generations: 2,
      children: 7,
      keep: 1,
      finalists: 1,
      attempts: 1,
      seed: 3,
      budget: { files: 1, hunks: 3, lines: 12 },
      critic: { command: [process.execPath, join(state, 'critic.mjs')] },
    });
    const started = await daemon.api('POST', '/api/evolutions', { config, base_dir: EXAMPLE });
    expect(started.status, JSON.stringify(started.body)).toBe(201);
    const evo = await evolutionEnd(daemon, started.body.id, 600_000);
    expect(evo.status, evo.error ?? '').toBe('finished');
    const byOrder = evo.candidates.filter((c) => c.parent !== null);
    const root = evo.candidates.find((c) => c.parent === null)!;
    const [good, big, leak, noop, harmful, critic, cosmetic, second] = byOrder;
    console.log(
      JSON.stringify(
        evo.candidates.map((c) => ({
          h: c.hash,
          s: c.status,
          r: c.train_reward,
          v: c.verdicts,
          ho: c.held_out_reward,
        })),
        null,
        1,
      ),
    );
    console.log('result', JSON.stringify(evo.result));
    expect(good!.status).toBe('accepted');
    expect(good!.selected).toBe(true);
    expect(big!.status).toBe('rejected');
    expect(big!.verdicts.budget!.reason).toMatch(/over the edit budget: .*lines > 12/);
    expect(leak!.status).toBe('rejected');
    expect(leak!.verdicts.leak!.reason).toMatch(/^leaks task add-|^leaks task sub-/);
    expect(noop!.status).toBe('rejected');
    expect(noop!.verdicts.pruner!.reason).toMatch(/no change/);
    expect(harmful!.status).toBe('pruned');
    expect(harmful!.verdicts.pruner!.reason).toMatch(/not better than the parent/);
    expect(critic!.status).toBe('rejected');
    expect(critic!.verdicts.critic).toEqual({ verdict: 'reject', reason: 'special-cases an answer' });
    expect(cosmetic!.status).toBe('pruned');
    expect(cosmetic!.verdicts.pruner!.reason).toMatch(/trajectories do not differ/);
    expect(second!.parent).toBe(good!.hash);
    expect(second!.status).toBe('accepted');
    expect(second!.novelty!).toBeGreaterThan(0);
    // The lineage: the second candidate's files come back from the root's and both patches.
    const files = (await daemon.api('GET', `/api/evolutions/${evo.id}/candidates/${second!.hash}/files`)).body
      .files;
    const base = readFileSync(join(EXAMPLE, 'harness', 'agent.mjs'), 'utf8');
    expect(files['agent.mjs']).toBe(edit(edit(base, retry), more));
    // Held-out: once for the root and once for the finalist, nowhere else.
    const r = evo.result!;
    expect(r.best).toBe(second!.hash);
    expect(r.held_out_evaluations).toBe(2);
    const evaluations = (await daemon.api('GET', '/api/evaluations?limit=1000')).body.items as Evaluation[];
    const mine = evaluations.filter((e) => e.name.includes(evo.id));
    expect(mine.filter((e) => e.split === 'test').length).toBe(2);
    expect(root.held_out_evaluation).not.toBeNull();
    expect(r.train_change!).toBeGreaterThan(0);
    expect(r.held_out_change!).toBeGreaterThan(0);
    // No brief names a held-out task.
    const all = readFileSync(join(EXAMPLE, '..', 'math-agent', 'tasks.jsonl'), 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l));
    const heldOut = splitTasks(all, { ...tasks, validation_fraction: 0 })
      .filter((t) => t.split === 'test')
      .map((t) => (t.input as { id: string }).id);
    const briefs = readdirSync(state).filter((f) => f.startsWith('brief-'));
    expect(briefs.length).toBe(14);
    for (const f of briefs) {
      const text = readFileSync(join(state, f), 'utf8');
      for (const id of heldOut) expect(text).not.toContain(`"${id}"`);
    }
  }, 900_000);
});
