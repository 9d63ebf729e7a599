// The evolve example a person runs first (examples/evolve/evolve.yaml, through `harness-rl evolve`):
// on the reference engine at a fixed model version it finishes in under 5 minutes with a candidate
// that beats its parent, the starting harness, on the held-out tasks.
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { evolveCommand } from '../../daemon/cli/commands/evolve';
import type { EvolutionDetail } from '../../daemon/protocol/evolution';
import { evolveBed } from '../helpers/evolve';
import { EXAMPLE } from '../helpers/math-harness';

const bed = evolveBed('evolve-example', {});

it('the example evolution beats its starting harness on held-out tasks in under 5 minutes', async () => {
  const started = Date.now();
  const { code, out } = await bed.cli(evolveCommand, [join(EXAMPLE, 'evolve.yaml'), '--json']);
  const seconds = (Date.now() - started) / 1000;
  const e = JSON.parse(out.at(-1)!) as EvolutionDetail;
  expect(code, e.error ?? '').toBe(0);
  const r = e.result!;
  console.log(JSON.stringify({ seconds, ...r }));
  expect(seconds).toBeLessThan(300);
  expect(r.best).not.toBeNull();
  expect(r.held_out_change!).toBeGreaterThan(0);
  expect(r.held_out_evaluations).toBe(2);
  const best = e.candidates.find((c) => c.hash === r.best)!;
  expect(best.held_out_reward!).toBeGreaterThan(
    e.candidates.find((c) => c.parent === null)!.held_out_reward!,
  );
}, 400_000);
