// `harness-rl samples` as a user runs it: the real CLI in a child process on fixture files.
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SampleJson, SamplesSummary, type Trajectory } from '../../daemon/protocol/samples';

const root = new URL('../../', import.meta.url).pathname;
const fixtures = join(root, 'test/fixtures/samples');

function cli(args: string[], stdin?: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = execFile(
      process.execPath,
      ['--import', 'tsx', 'daemon/cli/main.ts', 'samples', ...args],
      { cwd: root, maxBuffer: 64 << 20 },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
    if (stdin !== undefined) child.stdin!.end(stdin);
  });
}

const parseOutput = (stdout: string) => {
  const lines = stdout
    .trimEnd()
    .split('\n')
    .map((l) => JSON.parse(l));
  const summary = lines.pop() as { summary: unknown };
  return {
    samples: lines.map((l) => SampleJson.parse(l)),
    summary: SamplesSummary.strict().parse(summary.summary),
  };
};

describe('harness-rl samples', () => {
  it('writes one sample per line in input order, then the spec summary line (defaults exact/grpo/token-mean)', async () => {
    const { code, stdout, stderr } = await cli(['--input', join(fixtures, 'valid.jsonl')]);
    expect(stderr).toBe('');
    expect(code).toBe(0);
    const { samples, summary } = parseOutput(stdout);
    expect(samples.map((s) => [s.rollout_id, s.index])).toEqual([
      ['r1', 0],
      ['r2', 0],
      ['r2', 1],
    ]);
    // r1 merges its two calls; r2's second prompt [1,2,9] does not start with [1,2,3,8]
    expect(samples[0]).toMatchObject({
      input_ids: [1, 2, 3, 4, 5, 6, 7],
      loss_mask: [0, 0, 0, 1, 1, 0, 1],
      old_logprobs: [null, null, null, -0.1, -0.2, null, -0.3],
    });
    // g1 rewards 0.5 and 1.5 (r3 has none): grpo A = ±0.5/(√0.5 + 1e-6); token-mean over T = 5
    const a = 0.5 / (Math.SQRT1_2 + 1e-6);
    expect(samples[0].advantages[3]).toBeCloseTo(-a, 12);
    expect(samples[1].advantages).toEqual([0, 0, 0, samples[2].advantages[3]]);
    expect(samples[1].advantages[3]).toBeCloseTo(a, 12);
    expect(samples[0].loss_weights).toEqual([0, 0, 0, 0.2, 0.2, 0, 0.2]);
    // r4 (no calls) has a reward, so it is a trajectory that yields no sample; r3 is excluded
    expect(summary).toEqual({ trajectories: 4, samples: 3, prefix_breaks: 1, excluded: 1, mask_tokens: 5 });
  });

  it('reproduces the shared test vectors for every loss aggregation, and merge none', async () => {
    const vectors = JSON.parse(readFileSync(join(root, 'daemon/samples/vectors.json'), 'utf8')) as {
      trajectories: Trajectory[];
      cases: {
        options: { merge: string; advantage: string; loss_agg: string; max_len: number | null };
        samples: unknown[];
        summary: unknown;
      }[];
    };
    const dir = mkdtempSync(join(tmpdir(), 'samples-cli-'));
    const input = join(dir, 'trajectories.jsonl');
    writeFileSync(input, vectors.trajectories.map((t) => JSON.stringify(t)).join('\n'));
    const picks = [
      ['exact', 'grpo', 'token-mean'],
      ['exact', 'rloo', 'seq-mean-token-mean'],
      ['none', 'drgrpo', 'seq-mean-token-sum'],
      ['exact', 'reinforce', 'seq-mean-token-sum-norm'],
    ];
    for (const [merge, advantage, lossAgg] of picks) {
      const c = vectors.cases.find(
        (x) =>
          x.options.merge === merge && x.options.advantage === advantage && x.options.loss_agg === lossAgg,
      )!;
      const args = ['--input', input, '--merge', merge, '--advantage', advantage, '--loss-agg', lossAgg];
      if (c.options.max_len !== null) args.push('--max-len', String(c.options.max_len));
      const { code, stdout, stderr } = await cli(args);
      expect(stderr).toBe('');
      expect(code).toBe(0);
      const { samples, summary } = parseOutput(stdout);
      expect(samples).toEqual(c.samples);
      expect(summary).toEqual(c.summary);
    }
  });

  it('reads trajectories from stdin with --input -', async () => {
    const text = readFileSync(join(fixtures, 'valid.jsonl'), 'utf8');
    const fromFile = await cli(['--input', join(fixtures, 'valid.jsonl'), '--merge', 'none']);
    const fromStdin = await cli(['--input', '-', '--merge=none'], text);
    expect(fromStdin.code).toBe(0);
    expect(fromStdin.stdout).toBe(fromFile.stdout);
    expect(parseOutput(fromStdin.stdout).summary.samples).toBe(4);
  });

  const bad: [file: string, line: number, rollout: string | null, field: string, why: RegExp][] = [
    ['bad-json.jsonl', 2, 'b', 'response_ids', /not valid JSON/],
    ['bad-nan-reward.jsonl', 2, 'nan-reward', 'reward', /NaN is not a JSON number/],
    ['bad-logprobs-length.jsonl', 3, 'lp', 'calls[1].response_logprobs', /3 logprobs for 2 response ids/],
    ['bad-negative-id.jsonl', 1, 'neg', 'calls[0].prompt_ids[1]', />=0/],
    ['bad-fractional-id.jsonl', 2, 'frac', 'calls[0].response_ids[1]', /int/],
    ['bad-id-too-large.jsonl', 1, 'big', 'calls[0].prompt_ids[0]', /2\^31/],
    ['bad-unknown-field.jsonl', 1, 'extra', 'advantage', /unknown field/],
    ['bad-unknown-call-field.jsonl', 2, 'extra-call', 'calls[0].mask', /unknown field/],
    ['bad-missing-field.jsonl', 1, 'nogroup', 'group_id', /missing/],
    ['bad-reward-type.jsonl', 1, 'str', 'reward', /expected number/],
    ['bad-not-object.jsonl', 1, null, '(line)', /expected object/],
  ];
  for (const [file, line, rollout, field, why] of bad) {
    it(`rejects ${file}: exit ≠ 0, stderr names line ${line} and ${field}, nothing on stdout`, async () => {
      const { code, stdout, stderr } = await cli(['--input', join(fixtures, file)]);
      expect(code).not.toBe(0);
      expect(stdout).toBe('');
      const prefix = `line ${line}${rollout ? ` (rollout ${rollout})` : ''}: ${field}: `;
      const row = stderr.split('\n').find((l) => l.startsWith(prefix));
      expect(row, stderr).toBeDefined();
      expect(row).toMatch(why);
    });
  }

  it('names every bad line, not only the first', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'samples-cli-'));
    const input = join(dir, 'two-bad.jsonl');
    const ok = '{"rollout_id":"ok","group_id":"g","reward":1,"calls":[]}';
    writeFileSync(
      input,
      [ok, '{"rollout_id":"x","group_id":"g","reward":1,"calls":[],"y":1}', ok, 'nope'].join('\n'),
    );
    const { code, stdout, stderr } = await cli(['--input', input]);
    expect(code).toBe(1);
    expect(stdout).toBe('');
    expect(stderr).toMatch(/^line 2 \(rollout x\): y: /m);
    expect(stderr).toMatch(/^line 4: \(line\): not valid JSON/m);
  });

  it('usage errors exit 2 and name the option', async () => {
    const input = join(fixtures, 'valid.jsonl');
    const cases: [string[], RegExp][] = [
      [[], /--input FILE is required/],
      [['--input', input, '--advantage', 'ppo'], /--advantage must be one of grpo, drgrpo, rloo, reinforce/],
      [['--input', input, '--merge', 'fuzzy'], /--merge must be one of exact, none/],
      [['--input', input, '--loss-agg', 'seq-mean-token-sum-norm'], /needs --max-len/],
      [['--input', input, '--max-len', '0'], /--max-len must be a positive integer/],
      [['--input', input, '--bogus'], /bogus/],
    ];
    for (const [args, why] of cases) {
      const { code, stdout, stderr } = await cli(args);
      expect(code, args.join(' ')).toBe(2);
      expect(stdout).toBe('');
      expect(stderr).toMatch(why);
    }
  });

  it('a missing input file is an error naming the file', async () => {
    const { code, stdout, stderr } = await cli(['--input', join(fixtures, 'no-such-file.jsonl')]);
    expect(code).toBe(1);
    expect(stdout).toBe('');
    expect(stderr).toMatch(/cannot read .*no-such-file\.jsonl/);
  });
});
