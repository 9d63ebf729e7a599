import { describe, expect, it } from 'vitest';
import { rewardFromStdout } from './command';

describe('the reward line of a harness command', () => {
  it('is the last non-empty stdout line when it is {"reward": number}', () => {
    expect(rewardFromStdout('thinking…\n{"reward": 0.5}\n\n')).toBe(0.5);
    expect(rewardFromStdout('{"reward": 1}\nbye\n')).toBeUndefined();
    expect(rewardFromStdout('{"reward": "1"}')).toBeUndefined();
    expect(rewardFromStdout('')).toBeUndefined();
  });
});
