// An evolved candidate and a run's checkpoint as starting points, on the reference engine with tiny
// settings: `harness-rl eval CONFIG --candidate EVOLUTION/HASH --from-run RUN --version N` evaluates the
// candidate's files (its shorter prompt is what the model is sent) at model version N, not the config's
// harness or the run's latest weights; `harness-rl eval --from-run RUN --version N` runs the config's
// harness at N; `harness-rl evolve CONFIG --candidate …` evolves on from the candidate (the new root is
// that candidate, its child carries both edits, and Adopt Candidate writes into the config's harness
// folder); a candidate with another harness folder at once is refused.
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { evalCommand } from '../../daemon/cli/commands/eval';
import { evolveCommand } from '../../daemon/cli/commands/evolve';
import { runCommand } from '../../daemon/cli/commands/run';
import type { LlmCall, Page, Run } from '../../daemon/protocol/entities';
import type { Evaluation } from '../../daemon/protocol/evaluation';
import type { EvolutionDetail } from '../../daemon/protocol/evolution';
import { configFile, EDIT_PROPOSER, evolveBed, mathRun, runFinished, tinyEvolve } from '../helpers/evolve';
import { EDITS, EXAMPLE } from '../helpers/math-harness';

const INSTRUCTIONS = 'You are a careful calculator.';

const bed = evolveBed('evolve-candidate', { 'propose.mjs': EDIT_PROPOSER });

/** A run config file whose proposer makes `edits`. */
const evolveFile = (name: string, edits: [string, string][]) =>
  configFile(
    bed.state,
    mathRun(name, tinyEvolve([process.execPath, join(bed.state, 'propose.mjs'), JSON.stringify(edits)])),
  );
/** The last output line of a CLI command that must exit 0. */
const ok = async (command: typeof runCommand, argv: string[]) => (await bed.ok(command, argv)).at(-1)!;

/** Every llm call of an evaluation's attempts. */
async function callsOf(e: Evaluation): Promise<LlmCall[]> {
  const { daemon } = bed;
  const page = (await daemon.api<Page<{ id: string }>>('GET', `/api/rollouts?run_id=${e.run_id}&limit=100`))
    .body;
  const calls: LlmCall[] = [];
  for (const r of page.items)
    calls.push(
      ...(await daemon.api<{ llm_calls: LlmCall[] }>('GET', `/api/rollouts/${r.id}`)).body.llm_calls,
    );
  return calls;
}

const prompt = (c: LlmCall) => JSON.stringify((c.request as { messages: unknown }).messages);

describe('an evolved candidate and a checkpoint as starting points of eval and evolve', () => {
  it('eval --candidate --from-run --version runs the candidate at that version; evolve --candidate goes on from it', async () => {
    const { daemon, state } = bed;
    const file = evolveFile('math-candidate', EDITS.short);
    const started = JSON.parse(await ok(runCommand, ['start', file, '--json'])) as Run;
    const trained = await runFinished(daemon, started.id);
    expect(trained.model_version).toBe(2);

    const evo = JSON.parse(await ok(evolveCommand, [file, '--json'])) as EvolutionDetail;
    expect(evo.status, evo.error ?? '').toBe('finished');
    const child = evo.candidates.find((c) => c.parent !== null)!;
    const ref = `${evo.id}/${child.hash}`;

    // The candidate (the shorter prompt) at version 1, not the run's latest (2).
    const evaluated = JSON.parse(
      await ok(evalCommand, [
        file,
        '--candidate',
        ref,
        '--from-run',
        started.id,
        '--version',
        '1',
        '--split',
        'test',
        '--json',
      ]),
    ) as Evaluation;
    expect(evaluated.status, evaluated.error ?? '').toBe('finished');
    expect(evaluated.model_version).toBe(1);
    const run = (await daemon.api<Run>('GET', `/api/runs/${evaluated.run_id}`)).body;
    const config = run.config as { harness: { candidate: string }; model: { from_run: unknown } };
    expect(config.harness.candidate).toBe(ref);
    expect(config.model.from_run).toEqual({ run: started.id, version: 1 });
    const calls = await callsOf(evaluated);
    expect(calls.length).toBeGreaterThan(0);
    for (const c of calls) {
      expect(c.model_version).toBe(1);
      expect(prompt(c)).not.toContain(INSTRUCTIONS);
    }

    // A candidate and another harness folder at once: refused, naming the field, not one of them ignored.
    for (const command of [evalCommand, evolveCommand]) {
      const both = await bed.cli(command, [file, '--candidate', ref, '--harness', state, '--json']);
      expect(both.code).toBe(1);
      expect(both.err.join('\n')).toMatch(/harness_dir and config\.harness\.candidate.*\(harness_dir\)/);
    }

    // The config's harness at the same version: its prompt has the instructions.
    const baseline = JSON.parse(
      await ok(evalCommand, [file, '--from-run', started.id, '--version', '1', '--split', 'test', '--json']),
    ) as Evaluation;
    expect(baseline.model_version).toBe(1);
    const baseCalls = await callsOf(baseline);
    expect(baseCalls.length).toBeGreaterThan(0);
    for (const c of baseCalls) {
      expect(c.model_version).toBe(1);
      expect(prompt(c)).toContain(INSTRUCTIONS);
    }
    expect(evaluated.summary!.prompt_tokens_per_task!).toBeLessThan(
      baseline.summary!.prompt_tokens_per_task!,
    );

    // Evolve on from the candidate: the new root is the candidate (content-addressed: the same hash),
    // its evaluations send the shorter prompt, and the child carries the retry edit on top.
    const on = JSON.parse(
      await ok(evolveCommand, [evolveFile('math-candidate-on', EDITS.retry), '--candidate', ref, '--json']),
    ) as EvolutionDetail;
    expect(on.status, on.error ?? '').toBe('finished');
    // Its folder (where Adopt Candidate writes) is the config's harness folder, not the daemon's copy.
    expect(on.harness_dir).toBe(join(EXAMPLE, 'harness'));
    const root = on.candidates.find((c) => c.parent === null)!;
    expect(root.hash).toBe(child.hash);
    const rootEval = (await daemon.api<Evaluation>('GET', `/api/evaluations/${root.train_evaluation}`)).body;
    for (const c of await callsOf(rootEval)) expect(prompt(c)).not.toContain(INSTRUCTIONS);
    const grandchild = on.candidates.find((c) => c.parent === root.hash)!;
    const files = (
      await daemon.api<{ files: Record<string, string> }>(
        'GET',
        `/api/evolutions/${on.id}/candidates/${grandchild.hash}/files`,
      )
    ).body.files;
    expect(files['agent.mjs']).toContain('const MAX_TRIES = 4;');
    expect(files['agent.mjs']).not.toContain(INSTRUCTIONS);
  }, 600_000);
});
