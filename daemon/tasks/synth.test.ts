// The rules that decide which mutants become tasks, and the runners' reports they read: a test whose
// clean runs differ is flaky and in no task; a mutant is kept only when stable tests fail and others
// still pass, and one failing the same tests as a kept one is a duplicate.

import { mkdir, mkdtemp, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { commandFolders, parsePytest, parseVitest, type TestResult, type TestRun } from './run-tests';
import { classify, isTestFile, stablePassing } from './synth';

const runOf = (results: Record<string, TestResult['status']>, timedOut = false): TestRun => ({
  results: new Map(Object.entries(results).map(([id, status]) => [id, { status }])),
  timedOut,
  code: 0,
  seconds: 1,
  sandboxed: true,
  output: '',
});

describe('which mutants become tasks', () => {
  it('a test that passed in one clean run and failed in the other is flaky and left out', () => {
    const a = runOf({ t1: 'passed', t2: 'passed', t3: 'failed', t4: 'passed' });
    const b = runOf({ t1: 'passed', t2: 'failed', t3: 'failed' });
    expect(stablePassing(a, b)).toEqual({ stable: ['t1'], flaky: 2 });
  });

  it('kept with FAIL_TO_PASS and PASS_TO_PASS; dropped as equivalent, breaking everything, hanging, or a duplicate', () => {
    const stable = ['a', 'b', 'c'];
    const seen = new Set<string>();
    expect(classify(runOf({ a: 'failed', b: 'passed', c: 'passed' }), stable, seen)).toEqual({
      failToPass: ['a'],
      passToPass: ['b', 'c'],
    });
    expect(classify(runOf({ a: 'failed', b: 'passed', c: 'passed' }), stable, seen)).toBe('duplicate');
    // a test that did not run (a collection error) failed
    expect(classify(runOf({ b: 'passed', c: 'passed' }), stable, seen)).toBe('duplicate');
    expect(classify(runOf({ a: 'passed', b: 'passed', c: 'passed' }), stable, seen)).toBe('equivalent');
    expect(classify(runOf({}), stable, seen)).toBe('breaks-all');
    expect(classify(runOf({ a: 'failed' }, true), stable, seen)).toBe('timeout');
  });

  it('test files are never mutated', () => {
    expect(isTestFile('pkg/test_x.py', 'python')).toBe(true);
    expect(isTestFile('tests/helpers.py', 'python')).toBe(true);
    expect(isTestFile('pkg/core.py', 'python')).toBe(false);
    expect(isTestFile('src/a.test.ts', 'typescript')).toBe(true);
    expect(isTestFile('src/a.ts', 'typescript')).toBe(false);
  });
});

describe("the runners' reports", () => {
  it("pytest -rA: each PASSED and FAILED line of the summary, with the failure's message", () => {
    const output = [
      'test_x.py::test_a PASSED',
      '=========================== short test summary info ============================',
      'PASSED test_x.py::test_a',
      'PASSED test_x.py::test_p[a b-c]',
      "FAILED test_x.py::test_b - AssertionError: assert 'x' == 'y'",
      'ERROR test_y.py::test_c - fixture missing',
      '=================== 1 failed, 2 passed, 1 error in 0.12s ===================',
    ].join('\n');
    expect(Object.fromEntries(parsePytest(output))).toEqual({
      'test_x.py::test_a': { status: 'passed' },
      'test_x.py::test_p[a b-c]': { status: 'passed' },
      'test_x.py::test_b': { status: 'failed', message: "AssertionError: assert 'x' == 'y'" },
      'test_y.py::test_c': { status: 'failed', message: 'fixture missing' },
    });
  });

  it('vitest --reporter=json: file > describe > test, relative to the copy', () => {
    const report = {
      testResults: [
        {
          name: '/tmp/copy/src/a.test.ts',
          assertionResults: [
            { ancestorTitles: ['A'], title: 'works', status: 'passed', failureMessages: [] },
            {
              ancestorTitles: ['A', 'B'],
              title: 'fails',
              status: 'failed',
              failureMessages: ['Error: no\n  at x'],
            },
            { ancestorTitles: [], title: 'later', status: 'skipped' },
          ],
        },
      ],
    };
    expect(Object.fromEntries(parseVitest(report, '/tmp/copy'))).toEqual({
      'src/a.test.ts > A > works': { status: 'passed' },
      'src/a.test.ts > A > B > fails': { status: 'failed', message: 'Error: no\n  at x' },
      'src/a.test.ts > later': { status: 'skipped' },
    });
  });
});

describe('what the sandbox binds for the test command', () => {
  it('a venv python, named by path or found on PATH (an activated venv), brings its venv and the interpreter it links to', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'folders-'));
    try {
      await mkdir(join(dir, 'venv/bin'), { recursive: true });
      await symlink(process.execPath, join(dir, 'venv/bin/python'));
      const interpreter = dirname(dirname(process.execPath));
      expect(commandFolders(`${dir}/venv/bin/python -m pytest`)).toEqual([join(dir, 'venv'), interpreter]);
      expect(commandFolders('python -m pytest', `/nonexistent:${dir}/venv/bin`)).toEqual([
        join(dir, 'venv'),
        interpreter,
      ]);
      expect(commandFolders('python -m pytest', '/nonexistent')).toEqual([]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
