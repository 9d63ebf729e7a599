import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { EXIT_TEMPFAIL, failureOfError } from '../protocol/failures';
import type { RolloutContext } from '../protocol/worker';
import { commandRollout, noRewardText, rewardFromStdout } from './command';

describe('the reward line of a harness command', () => {
  it('is the last non-empty stdout line when it is {"reward": number}', () => {
    expect(rewardFromStdout('thinking…\n{"reward": 0.5}\n\n')).toBe(0.5);
    expect(rewardFromStdout('{"reward": 1}\nbye\n')).toBeUndefined();
    expect(rewardFromStdout('{"reward": "1"}')).toBeUndefined();
    expect(rewardFromStdout('')).toBeUndefined();
  });
});

describe('a harness that finished with no reward', () => {
  // test/fixtures/no-reward.json: the Python worker's tests read the same texts (test_verifier.py)
  const cases: {
    why: string;
    mode: 'spawn' | 'persistent';
    rollout_id: string;
    stdout: string | null;
    text: string;
  }[] = JSON.parse(readFileSync(new URL('../../test/fixtures/no-reward.json', import.meta.url), 'utf8'));
  it.each(cases)('is told what to print and where: $why', ({ mode, rollout_id, stdout, text }) => {
    expect(noRewardText({ mode, rolloutId: rollout_id, stdout: stdout ?? undefined })).toBe(text);
  });
});

describe('a harness command that fails', () => {
  const ctx = (signal: AbortSignal) =>
    ({
      rollout: { id: 'ro_1' },
      attempt: { id: 'att_1' },
      key: 'k',
      openai_base_url: 'http://127.0.0.1:1/v1',
      anthropic_base_url: 'http://127.0.0.1:1',
      input: null,
      model: 'm',
      daemonUrl: 'http://127.0.0.1:1',
      signal,
    }) as unknown as RolloutContext;
  const failureOf = async (code: number) => {
    const run = commandRollout([process.execPath, '-e', `process.exit(${code})`]);
    return run(ctx(new AbortController().signal)).then(
      () => null,
      (err: unknown) => failureOfError(err),
    );
  };

  it('fails as the harness for a nonzero exit, and as infrastructure when it exits 75 (EX_TEMPFAIL)', async () => {
    expect(await failureOf(3)).toEqual({ kind: 'harness', reason: 'exit' });
    expect(await failureOf(EXIT_TEMPFAIL)).toEqual({ kind: 'infrastructure', reason: 'reported' });
  });
});
