// An evolution on the event stream (GET /api/events), as the extension's Evolution view and evaluation
// page follow it: the evolution's status changes, each candidate added, scored, accepted, pruned,
// rejected and kept, in the order they happened with the stored payloads, and every evaluation's
// attempts counted live until it finishes.
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Evaluation, EvaluationProgress } from '../../daemon/protocol/evaluation';
import type { Candidate, CandidateChange } from '../../daemon/protocol/evolution';
import { listenEvents } from '../helpers/events';
import { evolutionEnd, evolveBed, mathRun, tinyEvolve } from '../helpers/evolve';
import { EDITS, EXAMPLE } from '../helpers/math-harness';

const EXTRACTION = "  return (text.match(/\\d/) ?? [''])[0];";
// Proposal i makes the i-th edit list of its argument.
const PROPOSER = `
import { readFileSync, writeFileSync } from 'node:fs';
const { proposal } = JSON.parse(readFileSync(process.env.HARNESS_RL_BRIEF_JSON, 'utf8'));
let text = readFileSync('agent.mjs', 'utf8');
for (const [from, to] of JSON.parse(process.argv[2])[proposal] ?? []) text = text.replace(from, to);
writeFileSync('agent.mjs', text);
`;
const PLAN = [EDITS.retry, [[EXTRACTION, "  return 'x';"]], []]; // good, harmful, no-op

const bed = evolveBed('evolve-events', { 'propose.mjs': PROPOSER });

type Step = [role: string, change: CandidateChange, status: Candidate['status']];

describe('an evolution on the event stream', () => {
  it('announces its status, each candidate added/scored/accepted/pruned/rejected/kept, and evaluation progress, in order', async () => {
    const { daemon } = bed;
    const socket = await listenEvents(daemon);
    const proposer = [process.execPath, join(bed.state, 'propose.mjs'), JSON.stringify(PLAN)];
    const config = mathRun('math-events', tinyEvolve(proposer, { children: 3, pruner: { margin: 0 } }), 12);
    const started = await daemon.api('POST', '/api/evolutions', { config, base_dir: EXAMPLE });
    expect(started.status, JSON.stringify(started.body)).toBe(201);
    const evo = await evolutionEnd(daemon, started.body.id);
    expect(evo.status, evo.error ?? '').toBe('finished');
    // The finished event is published after the commit GET already reads: give it a moment to arrive.
    await new Promise((r) => setTimeout(r, 200));
    socket.close();
    const { events } = socket;

    const mine = events.filter(
      (e) =>
        (e.type === 'evolution' && e.evolution.id === evo.id) ||
        (e.type === 'candidate' && e.candidate.evolution_id === evo.id),
    );
    // The evolution: running first, finished last, with the result GET shows.
    const statuses = mine.flatMap((e) => (e.type === 'evolution' ? [e.evolution.status] : []));
    expect(statuses).toEqual(['running', 'finished']);
    expect(mine[0]!.type).toBe('evolution');
    const last = mine.at(-1)!;
    expect(last.type === 'evolution' && last.evolution.result).toEqual(evo.result);

    // Each candidate's steps, in the order they happened.
    const [root, good, harmful, noop] = evo.candidates;
    const role = new Map(
      [root!, good!, harmful!, noop!].map((c, i) => [c.hash, ['root', 'good', 'harmful', 'noop'][i]!]),
    );
    const kept = good!.status === 'accepted';
    const expected: Step[] = [
      ['root', 'added', 'evaluating'],
      ['root', 'scored', 'evaluating'],
      ['root', 'status', 'accepted'],
      ['good', 'added', 'evaluating'],
      ['good', 'scored', 'evaluating'],
      ['good', 'status', good!.status],
      ['harmful', 'added', 'evaluating'],
      ['harmful', 'scored', 'evaluating'],
      ['harmful', 'status', 'pruned'],
      ['noop', 'added', 'rejected'],
      ...(kept ? [['good', 'selected', 'accepted'] as Step] : []),
      ['root', 'scored', 'accepted'], // held-out
      ...(kept ? [['good', 'scored', 'accepted'] as Step] : []),
    ];
    const seen = mine.flatMap((e) =>
      e.type === 'candidate' ? [[role.get(e.candidate.hash), e.change, e.candidate.status]] : [],
    );
    expect(seen).toEqual(expected);
    expect(harmful!.verdicts.pruner!.verdict).toBe('reject');
    expect(noop!.verdicts.pruner!.reason).toMatch(/no change/);
    // Each candidate's last event carries it as stored.
    for (const c of evo.candidates) {
      const { diff: _diff, ...stored } = c;
      const events = mine.filter((e) => e.type === 'candidate' && e.candidate.hash === c.hash);
      expect(events.at(-1)).toMatchObject({ candidate: stored });
    }

    // Every evaluation of the evolution: created running, its attempts counted up to all of them, then
    // finished with the figures GET shows; nothing of it after that.
    const ids = evo.candidates.flatMap((c) => [c.train_evaluation, c.held_out_evaluation]).filter(Boolean);
    expect(ids.length).toBe(kept ? 5 : 4); // train for each but the no-op, held-out for the root and the kept one
    for (const id of ids) {
      const stored = (await daemon.api<Evaluation>('GET', `/api/evaluations/${id}`)).body;
      const its = events.filter(
        (e) =>
          (e.type === 'evaluation' && e.evaluation.id === id) ||
          (e.type === 'evaluation_progress' && e.progress.evaluation_id === id),
      );
      const first = its[0]!;
      expect(first.type === 'evaluation' && first.evaluation.status).toBe('running');
      const end = its.at(-1)!;
      expect(end.type).toBe('evaluation');
      const { tasks: _tasks, ...shown } = stored;
      expect(end.type === 'evaluation' && end.evaluation).toEqual(shown);
      const progress = its.flatMap((e) => (e.type === 'evaluation_progress' ? [e.progress] : []));
      const total = stored.tasks!.length * stored.attempts;
      expect(progress.length, id!).toBeGreaterThan(0);
      expect(progress.every((p) => p.total === total && p.run_id === stored.run_id)).toBe(true);
      const finished = progress.map((p) => p.finished);
      expect(finished).toEqual([...finished].sort((a, b) => a - b));
      expect(progress.at(-1)).toMatchObject({
        finished: total,
        queued: 0,
        running: 0,
      } satisfies Partial<EvaluationProgress>);
      expect(progress.at(-1)!.succeeded + progress.at(-1)!.failed).toBe(total);
    }
  }, 400_000);
});
