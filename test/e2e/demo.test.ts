// The demo, shortened: GRPO on the reference engine with the example math agent must raise the reward
// by a margin that the same run with learning disabled (a frozen policy) does not reach.
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { type DemoResult, run as demoCommand, runDemo } from '../../daemon/cli/commands/demo';

// Shortened: 10 steps instead of 30, at learning rate 0.03 instead of 0.02 so the format is learned
// within them. The demo replays exactly for a seed: seed 2 goes 0.068 → 0.450 (first and last two steps).
const STEPS = 10;
const SEED = 2;
const LEARNING_RATE = 0.03;
const MARGIN = 0.1;

describe('harness-rl demo', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'harness-rl-demo-test-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it(`raises the reward by more than ${MARGIN} in ${STEPS} steps where a frozen policy does not`, async () => {
    let printed = '';
    const trained: DemoResult = await runDemo({
      steps: STEPS,
      seed: SEED,
      overrides: { algorithm: { learning_rate: LEARNING_RATE } },
      dataDir: join(dir, 'trained'),
      write: (text) => {
        printed += text;
      },
      tty: true,
    });
    expect(trained.run.status).toBe('finished');
    expect(trained.metrics).toHaveLength(STEPS);
    expect(printed).toContain('mean reward');
    expect(printed).toContain('prefix breaks');
    // The progress bar counts each step's rollouts, and after the last step's row it counts none.
    expect(printed).toMatch(new RegExp(`step 1/${STEPS} · rollouts \\d+/\\d+`));
    const afterLastRow = printed.slice(printed.lastIndexOf(`\x1b[2K${String(STEPS - 1).padStart(6)} `));
    expect(afterLastRow).toContain(`step ${STEPS}/${STEPS} · finishing`);
    expect(afterLastRow).not.toContain('rollouts');
    expect(readFileSync(join(trained.data, 'reward.svg'), 'utf8')).toContain('<polyline');

    // The frozen baseline through the command itself: its last stdout line is the JSON summary.
    const lines: string[] = [];
    const spy = vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
      lines.push(String(chunk));
      return true;
    });
    let code: number;
    try {
      code = await demoCommand([
        '--steps',
        String(STEPS),
        '--seed',
        '1',
        '--frozen',
        '--data',
        join(dir, 'frozen'),
      ]);
    } finally {
      spy.mockRestore();
    }
    expect(code).toBe(0);
    const last = lines.join('').trim().split('\n').at(-1)!;
    const frozen = JSON.parse(last).demo as {
      steps: number;
      initial_reward: number;
      final_reward: number;
      data: string;
    };
    expect(frozen).toMatchObject({ steps: STEPS, data: join(dir, 'frozen') });
    expect(existsSync(join(frozen.data, 'reward.svg'))).toBe(true);

    const gain = trained.final_reward! - trained.initial_reward!;
    const frozenGain = frozen.final_reward - frozen.initial_reward;
    expect(gain, `trained ${trained.initial_reward} → ${trained.final_reward}`).toBeGreaterThan(MARGIN);
    expect(frozenGain, `frozen ${frozen.initial_reward} → ${frozen.final_reward}`).toBeLessThan(MARGIN);
    expect(trained.final_reward!).toBeGreaterThan(frozen.final_reward + MARGIN);
  }, 600_000);
});
