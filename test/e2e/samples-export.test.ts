// `harness-rl export` and analyzeRollout over a real SQLite store: a run with groups, rollouts, recorded
// calls and rewards, exported by the real CLI and compared with `harness-rl samples` on the same data.
import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it, vi } from 'vitest';

// child processes that load the whole CLI: generous on a busy machine
vi.setConfig({ testTimeout: 180_000 });

import type { NewLlmCall, Run } from '../../daemon/protocol/entities';
import { analyzeRollout } from '../../daemon/samples';
import { openStore } from '../../daemon/store/open';
import type { Store } from '../../daemon/store/store';
import { newCall } from '../../daemon/store/test-calls';

const root = new URL('../../', import.meta.url).pathname;

function cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', 'daemon/cli/main.ts', ...args],
      { cwd: root, maxBuffer: 64 << 20 },
      (err, stdout, stderr) =>
        resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr }),
    );
  });
}

function call(
  rolloutId: string,
  attemptId: string,
  prompt: number[],
  response: number[],
  patch: Partial<NewLlmCall> = {},
): NewLlmCall {
  return newCall({
    rollout_id: rolloutId,
    attempt_id: attemptId,
    request: { model: 'm', messages: [] },
    response: null,
    prompt_ids: prompt,
    response_ids: response,
    response_logprobs: response.map((_, i) => -0.25 * (i + 1)),
    usage: null,
    queue_ms: null,
    ttft_ms: null,
    total_ms: null,
    ...patch,
  });
}

/** The same rollouts as trajectory lines, for `harness-rl samples`. */
const trajectoryLines: string[] = [];

let dir: string;
let run: Run;
let brokenRollout: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'samples-export-'));
  const store: Store = await openStore('sqlite', dir);
  run = await store.createRun({
    name: 'export-test',
    config: {
      name: 'export-test',
      tasks: { file: 'tasks.jsonl' },
      algorithm: { merge: 'exact', advantage: 'rloo', loss_agg: 'seq-mean-token-mean' },
    },
  });
  const [train, validation] = await store.createTasks(run.id, [
    { input: { q: 1 }, split: 'train' },
    { input: { q: 2 }, split: 'validation' },
  ]);
  const group = await store.createGroup({ run_id: run.id, task_id: train.id, step: 0, size: 3 });
  const valGroup = await store.createGroup({ run_id: run.id, task_id: validation.id, step: 0, size: 1 });
  const [a, b, c, queued] = await store.createRollouts([
    ...[0, 1, 2, 3].map(() => ({
      kind: 'run' as const,
      run_id: run.id,
      group_id: group.id,
      task_id: train.id,
    })),
  ]);
  const [val] = await store.createRollouts([
    { kind: 'run', run_id: run.id, group_id: valGroup.id, task_id: validation.id },
  ]);
  void queued; // stays queued: not finished, not exported

  const finish = async (
    id: string,
    reward: number | null,
    calls: [number[], number[], Partial<NewLlmCall>?][],
    group_id: string,
    line = true,
  ) => {
    const attempt = await store.startAttempt(id, 'test');
    await store.recordLlmCalls(calls.map(([p, r, patch]) => call(id, attempt.id, p, r, patch)));
    if (reward !== null) await store.addReward(id, { value: reward, source: 'test' });
    await store.finishAttempt(attempt.id, 'succeeded');
    if (!line) return;
    const ok = calls.filter(([, , patch]) => !patch?.status || patch.status === 'ok');
    trajectoryLines.push(
      JSON.stringify({
        rollout_id: id,
        group_id,
        reward,
        calls: ok.map(([p, r]) => ({
          prompt_ids: p,
          response_ids: r,
          response_logprobs: r.map((_, i) => -0.25 * (i + 1)),
        })),
      }),
    );
  };
  // a: two turns that extend each other, plus a failed call in between that is skipped
  await finish(
    a.id,
    1,
    [
      [
        [1, 2, 3],
        [4, 5],
      ],
      [[1, 2, 3, 4, 5], [9], { status: 'error', error: 'boom', response_ids: null, response_logprobs: null }],
      [
        [1, 2, 3, 4, 5, 6],
        [7, 8],
      ],
    ],
    group.id,
  );
  // b: a prefix break (the second prompt rewrote the response)
  await finish(
    b.id,
    0,
    [
      [[1, 2, 3], [10]],
      [[1, 2, 3, 11, 6], [12]],
    ],
    group.id,
  );
  // c: no reward: excluded
  await finish(
    c.id,
    null,
    [
      [
        [1, 2, 3],
        [13, 14],
      ],
    ],
    group.id,
  );
  brokenRollout = b.id;
  // a validation rollout: not a training sample
  await finish(val.id, 1, [[[7, 7], [8]]], valGroup.id, false);
  // groups the step did not train on: their succeeded rollouts are not exported either
  for (const status of ['dropped', 'failed'] as const) {
    const left = await store.createGroup({ run_id: run.id, task_id: train.id, step: 0, size: 2 });
    const rollouts = await store.createRollouts(
      [0, 1].map(() => ({ kind: 'run' as const, run_id: run.id, group_id: left.id, task_id: train.id })),
    );
    await finish(rollouts[0].id, 1, [[[1, 2, 3], [20]]], left.id, false);
    await finish(rollouts[1].id, 0, [[[1, 2, 3], [21]]], left.id, false);
    await store.setGroupStatus(left.id, status);
  }
  for (const g of [group, valGroup]) await store.setGroupStatus(g.id, 'complete');
  await store.close();
});

describe('harness-rl export', () => {
  it('writes the run’s samples exactly as `harness-rl samples` builds them from the same trajectories', async () => {
    const out = join(dir, 'out.jsonl');
    const exported = await cli(['export', '--run', run.id, '--data', dir, '--out', out]);
    expect(exported.stderr).toMatch(/exported 3 samples from 3 rollouts/);
    expect(exported.code).toBe(0);
    const lines = readFileSync(out, 'utf8').trimEnd().split('\n');
    const summary = JSON.parse(lines.pop()!).summary;
    expect(summary).toMatchObject({
      run_id: run.id,
      trajectories: 3,
      samples: 3,
      prefix_breaks: 1,
      excluded: 1,
      validation_rollouts: 1,
    });

    const input = join(dir, 'trajectories.jsonl');
    writeFileSync(input, trajectoryLines.join('\n'));
    const offline = await cli([
      'samples',
      '--input',
      input,
      '--merge',
      'exact',
      '--advantage',
      'rloo',
      '--loss-agg',
      'seq-mean-token-mean',
    ]);
    expect(offline.code).toBe(0);
    const offlineLines = offline.stdout.trimEnd().split('\n');
    offlineLines.pop();
    // the same samples (the store lists rollouts in its own order)
    const byRollout = (ls: string[]) =>
      ls
        .map((l) => JSON.parse(l))
        .sort((x, y) => x.rollout_id.localeCompare(y.rollout_id) || x.index - y.index);
    expect(byRollout(lines)).toEqual(byRollout(offlineLines));
    // rloo over rewards 1 and 0: ±1; seq-mean-token-mean over B = 3 samples
    const first = byRollout(lines).find((s) => s.input_ids.length === 8);
    expect(first.input_ids).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(first.advantages).toEqual([0, 0, 0, 1, 1, 0, 1, 1]);
    expect(first.loss_weights[3]).toBeCloseTo(1 / (3 * 4), 15);
  });

  it('writes to stdout without --out', async () => {
    const { code, stdout } = await cli(['export', '--run', run.id, '--data', dir]);
    expect(code).toBe(0);
    expect(stdout.trimEnd().split('\n')).toHaveLength(4);
  });

  it('an unknown run is an error naming it', async () => {
    const unknown = await cli(['export', '--run', 'run_nope', '--data', dir]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/run run_nope not found/);
  });

  it('a data folder without a store is an error, and creates none', async () => {
    const emptyDir = mkdtempSync(join(tmpdir(), 'empty-'));
    const empty = await cli(['export', '--run', run.id, '--data', emptyDir]);
    expect(empty.code).toBe(1);
    expect(empty.stderr).toMatch(/no store in/);
    expect(readdirSync(emptyDir)).toEqual([]);
  });

  it('--run is required', async () => {
    const usage = await cli(['export']);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toMatch(/--run ID is required/);
  });
});

describe('analyzeRollout', () => {
  it('stores a rollout’s merge stats and its prefix breaks with their position and windows', async () => {
    const store = await openStore('sqlite', dir);
    try {
      const result = await analyzeRollout(store, brokenRollout);
      expect(result.stats).toEqual({ samples: 2, prefix_breaks: 1, mask_tokens: 2, truncations: 0 });
      expect(result.prefix_breaks).toEqual([
        {
          call_index: 1,
          position: 3,
          expected: [10],
          actual: [11, 6],
          expected_text: null,
          actual_text: null,
          class: 'other',
        },
      ]);
      expect((await store.getRollout(brokenRollout))!.stats).toEqual(result.stats);
      expect(await store.getPrefixBreaks(brokenRollout)).toEqual(result.prefix_breaks);
      await expect(analyzeRollout(store, 'ro_missing')).rejects.toThrow(/not found/);
    } finally {
      await store.close();
    }
  });
});
