// The gold patch format and task files: a diff made here applies with `git apply` wherever the change
// sits (first line, last line, a file without a final newline), and a bad task line names its line and
// field.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { applyPatch, readTasks, unifiedDiff } from './swe-format';

let dir: string;
afterEach(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

const lines = (n: number) => Array.from({ length: n }, (_, i) => `line ${i + 1}`).join('\n');

describe('gold patches', () => {
  const cases: [string, string, string][] = [
    ['a change in the middle', `${lines(20)}\n`, `${lines(20).replace('line 10', 'line ten')}\n`],
    ['a change on the first line', `${lines(5)}\n`, `${lines(5).replace('line 1\n', 'first\n')}\n`],
    ['a change on the last line', `${lines(5)}\n`, `${lines(5).replace('line 5', 'last')}\n`],
    ['a file without a final newline', lines(8), lines(8).replace('line 8', 'eight')],
    ['a removed line', `${lines(9)}\n`, `${lines(9).replace('line 4\n', '')}\n`],
    ['a change on one line of a one-line file', 'x < 1\n', 'x <= 1\n'],
  ];
  for (const [what, before, after] of cases) {
    it(`applies with git apply: ${what}`, async () => {
      dir = await mkdtemp(join(tmpdir(), 'swe-format-'));
      await writeFile(join(dir, 'f.py'), before);
      await applyPatch(dir, unifiedDiff('f.py', before, after));
      expect(await readFile(join(dir, 'f.py'), 'utf8')).toBe(after);
    });
  }

  it('a patch that does not apply is refused with git’s reason', async () => {
    dir = await mkdtemp(join(tmpdir(), 'swe-format-'));
    await writeFile(join(dir, 'f.py'), 'something else\n');
    await expect(applyPatch(dir, unifiedDiff('f.py', 'a\n', 'b\n'))).rejects.toThrow(
      /the patch does not apply: .*f\.py/,
    );
  });
});

describe('task files', () => {
  it('read FAIL_TO_PASS given as a list or as a JSON string (SWE-bench on Hugging Face)', async () => {
    dir = await mkdtemp(join(tmpdir(), 'swe-format-'));
    const base = { instance_id: 'a', repo: 'o/r', base_commit: 'c', patch: '', problem_statement: 's' };
    const file = join(dir, 't.jsonl');
    await writeFile(
      file,
      `${JSON.stringify({ ...base, FAIL_TO_PASS: ['t1'], PASS_TO_PASS: '["t2"]' })}\n\n${JSON.stringify({ ...base, instance_id: 'b', FAIL_TO_PASS: '["t3"]', PASS_TO_PASS: [] })}\n`,
    );
    const tasks = await readTasks(file);
    expect(tasks.map((t) => [t.instance_id, t.FAIL_TO_PASS, t.PASS_TO_PASS])).toEqual([
      ['a', ['t1'], ['t2']],
      ['b', ['t3'], []],
    ]);
  });

  it('a malformed line is named by its line number and field', async () => {
    dir = await mkdtemp(join(tmpdir(), 'swe-format-'));
    const file = join(dir, 't.jsonl');
    await writeFile(
      file,
      `${JSON.stringify({ instance_id: 'a', repo: 'o/r', base_commit: 'c', patch: '', problem_statement: 's', FAIL_TO_PASS: 'nope', PASS_TO_PASS: [] })}\n`,
    );
    await expect(readTasks(file)).rejects.toThrow(`${file}:1: FAIL_TO_PASS: not a list of test ids`);
    await writeFile(file, '{"instance_id": "a"}\nnot json\n');
    await expect(readTasks(file)).rejects.toThrow(`${file}:1: repo:`);
  });
});
