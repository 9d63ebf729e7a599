import { afterEach, describe, expect, it, vi } from 'vitest';
import { parseCommandArgs } from './args';

const USAGE = 'usage: harness-rl thing [--n N]\n';
const options = { n: { type: 'string' }, help: { type: 'boolean', short: 'h' } } as const;

afterEach(() => {
  vi.restoreAllMocks();
});

describe('parseCommandArgs', () => {
  it('returns the parsed values', () => {
    expect(parseCommandArgs(['--n', '3'], options, USAGE)).toEqual({ n: '3' });
  });

  it('an unknown option prints its message and the usage to stderr and gives exit code 2', () => {
    const err = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    expect(parseCommandArgs(['--bogus'], options, USAGE)).toBe(2);
    expect(String(err.mock.calls[0][0])).toMatch(/--bogus[\s\S]*\nusage: harness-rl thing/);
  });

  it('a positional argument is refused (strict) with exit code 2', () => {
    vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    expect(parseCommandArgs(['extra'], options, USAGE)).toBe(2);
  });

  it('--help and -h print the usage to stdout and give exit code 0', () => {
    const out = vi.spyOn(process.stdout, 'write').mockImplementation(() => true);
    expect(parseCommandArgs(['--help'], options, USAGE)).toBe(0);
    expect(parseCommandArgs(['-h', '--n', '1'], options, USAGE)).toBe(0);
    expect(out.mock.calls.map((c) => c[0])).toEqual([USAGE, USAGE]);
  });
});
