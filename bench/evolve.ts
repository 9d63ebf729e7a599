// Harness evolution's own cost against the evaluations it wraps: examples/evolve/evolve.yaml run
// through an in-process daemon on the reference engine (goal: overhead < 5 % of evaluation time).
//   evolve.overhead  overhead_s_per_candidate (snapshot, diff, regularisers, bookkeeping),
//                    evaluation_s_per_candidate, overhead_fraction, and the run's held-out change
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { evolveCommand } from '../daemon/cli/commands/evolve';
import { startDaemon } from '../daemon/daemon';
import type { EvolutionDetail } from '../daemon/protocol/evolution';
import { emit, root, round } from './emit';

export default async function bench(): Promise<void> {
  const dataDir = await mkdtemp(join(tmpdir(), 'harness-rl-bench-evolve-'));
  const daemon = await startDaemon({ port: 0, token: `bench_${Date.now()}`, dataDir });
  try {
    const out: string[] = [];
    const started = Date.now();
    const code = await evolveCommand(
      [join(root, 'examples/evolve/evolve.yaml'), '--url', daemon.url, '--token', daemon.token, '--json'],
      { out: (t) => out.push(t), err: () => {} },
    );
    const e = JSON.parse(out.at(-1) ?? 'null') as EvolutionDetail | null;
    if (code !== 0 || !e?.result)
      throw new Error(`the example evolution did not finish: ${e?.error ?? out.join('\n')}`);
    const r = e.result;
    emit('evolve.overhead', {
      candidates: r.candidates,
      overhead_s_per_candidate: round(r.overhead_s / r.candidates, 4),
      evaluation_s_per_candidate: round(r.evaluation_s / r.candidates, 2),
      overhead_fraction: round(r.overhead_s / r.evaluation_s, 4),
      proposer_s: round(r.proposer_s, 2),
      wall_s: round((Date.now() - started) / 1000, 1),
      held_out_change: r.held_out_change === null ? null : round(r.held_out_change),
      train_change: r.train_change === null ? null : round(r.train_change),
      policy_token_change: r.policy_token_change === null ? null : round(r.policy_token_change),
    });
  } finally {
    await daemon.close();
    await rm(dataDir, { recursive: true, force: true });
  }
}
