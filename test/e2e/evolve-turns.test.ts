// Harness and weights improve in turns, on the reference engine with tiny settings: a run trains two
// steps; `harness-rl evolve --from-run` evolves the math harness with every evaluation at that run's
// model version (its checkpoint's weights); `harness-rl run start --candidate … --from-run …` trains on
// from there with the evolved harness, and the run says which candidate it ran.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { evolveCommand } from '../../daemon/cli/commands/evolve';
import { runCommand } from '../../daemon/cli/commands/run';
import type { Page, Run } from '../../daemon/protocol/entities';
import type { Evaluation } from '../../daemon/protocol/evaluation';
import type { EvolutionDetail } from '../../daemon/protocol/evolution';
import { configFile, EDIT_PROPOSER, evolveBed, mathRun, runFinished, tinyEvolve } from '../helpers/evolve';
import { EDITS } from '../helpers/math-harness';

const bed = evolveBed('evolve-turns', { 'propose.mjs': EDIT_PROPOSER });
// The proposer makes the retry edit (ask again while the reply holds no digit).
const turnsFile = () =>
  configFile(
    bed.state,
    mathRun(
      'math-turns',
      tinyEvolve([process.execPath, join(bed.state, 'propose.mjs'), JSON.stringify(EDITS.retry)]),
      12,
    ),
  );
const cli = async (command: typeof runCommand, argv: string[]) => ({ out: await bed.ok(command, argv) });

describe('harness and weights in turns', () => {
  it('run → evolve at its checkpoint → run from the evolved candidate at that checkpoint', async () => {
    const { daemon } = bed;
    const file = turnsFile();
    const finished = (id: string) => runFinished(daemon, id);
    const first = JSON.parse((await cli(runCommand, ['start', file, '--json'])).out[0]!) as Run;
    const trained = await finished(first.id);
    expect(trained.model_version).toBe(2);

    const evolved = await cli(evolveCommand, [file, '--from-run', first.id, '--json']);
    const evo = JSON.parse(evolved.out.at(-1)!) as EvolutionDetail;
    expect(evo.status, evo.error ?? '').toBe('finished');
    const child = evo.candidates.find((c) => c.parent !== null)!;
    expect(child.status, JSON.stringify(child.verdicts)).toBe('accepted');
    // Every evaluation of the evolution (train and held-out, root and child) at the run's version.
    const ids = evo.candidates.flatMap((c) => [c.train_evaluation, c.held_out_evaluation]).filter(Boolean);
    expect(ids.length).toBe(4);
    for (const id of ids) {
      const e = (await daemon.api<Evaluation>('GET', `/api/evaluations/${id}`)).body;
      expect(e.model_version, id!).toBe(2);
    }

    const ref = `${evo.id}/${child.hash}`;
    const bad = await daemon.api('POST', '/api/runs', {
      config: {
        ...JSON.parse(readFileSync(file, 'utf8')).run,
        harness: { candidate: `${evo.id}/${'0'.repeat(24)}` },
      },
    });
    expect(bad.status).toBe(400);
    expect(bad.body.error.field).toBe('config.harness.candidate');
    // Weights it does not keep, or a trainer the checkpoint cannot go to: 400s that say so.
    const base = JSON.parse(readFileSync(file, 'utf8')).run;
    const gone = await daemon.api('POST', '/api/runs', {
      config: { ...base, model: { from_run: { run: first.id, version: 9 } } },
    });
    expect(gone.status).toBe(400);
    expect(gone.body.error.field).toBe('config.model.from_run.version');
    expect(gone.body.error.message).toMatch(
      /keeps no checkpoint of model version 9 \(it keeps versions 1, 2\)/,
    );
    const node = await daemon.api('POST', '/api/runs', {
      config: { ...base, model: { from_run: { run: first.id } }, trainer: { endpoint: 'ws://127.0.0.1:9' } },
    });
    expect(node.status).toBe(400);
    expect(node.body.error.field).toBe('config.model.from_run');

    const started = await cli(runCommand, [
      'start',
      file,
      '--candidate',
      ref,
      '--from-run',
      first.id,
      '--version',
      '2',
    ]);
    expect(started.out[0]).toContain(`harness: candidate ${ref}`);
    const id = /started run (\S+)/.exec(started.out[0]!)![1]!;
    const second = await finished(id);
    const config = second.config as {
      harness: { candidate: string; dir: string };
      model: { from_run: unknown };
    };
    expect(config.harness.candidate).toBe(ref);
    expect(config.model.from_run).toEqual({ run: first.id, version: 2 });
    expect(readFileSync(join(config.harness.dir, 'agent.mjs'), 'utf8')).toContain('const MAX_TRIES = 4;');
    // It went on from version 2: two more steps make 4, and its calls were sampled at 2 and later.
    expect(second.model_version).toBe(4);
    const rollouts = (await daemon.api<Page<{ id: string }>>('GET', `/api/rollouts?run_id=${id}&limit=4`))
      .body;
    for (const r of rollouts.items) {
      const detail = (await daemon.api('GET', `/api/rollouts/${r.id}`)).body;
      for (const call of detail.llm_calls) expect(call.model_version).toBeGreaterThanOrEqual(2);
    }
    const listed = (await cli(runCommand, ['list'])).out.join('\n');
    expect(listed).toMatch(/CANDIDATE/);
    expect(listed).toContain(ref);
    // the candidates' evaluations ran as evaluation runs; --kind keeps the runs that trained
    expect(listed).toMatch(/ evaluation /);
    const trainingOnly = (await cli(runCommand, ['list', '--kind', 'training'])).out.join('\n');
    expect(trainingOnly).toContain(ref);
    expect(trainingOnly).not.toMatch(/ evaluation /);
  }, 600_000);
});
