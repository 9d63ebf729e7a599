// examples/coding-agent on a synthesised task (`harness-rl tasks synth` on a small Python repository):
// the agent, led by a scripted tool-calling backend through the daemon's proxy, works in the task's
// buggy tree, runs its tests in the sandbox, hands on its change as a diff, and the example's verifier
// scores it 1; an agent that changes nothing scores 0 with the failing test named.
import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunnableTask } from '../../daemon/protocol/tasks';
import { type ScriptedReply, startFakeVllm } from '../fixtures/fake-vllm';
import { startTestDaemon } from '../helpers/daemon';
import { rolloutEnv, runExampleScript } from '../helpers/examples';

const ROOT = resolve(__dirname, '../..');
const PYTEST = `${ROOT}/.cache/synth-python/venv/bin/python -m pytest`;
const SOURCE =
  'def clamp(x, lo, hi):\n    if x < lo:\n        return lo\n    if x > hi:\n        return hi\n    return x\n';
const TESTS = [
  'from clamp import clamp',
  'def test_below():\n    assert clamp(-1, 0, 3) == 0',
  'def test_above():\n    assert clamp(5, 0, 3) == 3',
  'def test_inside():\n    assert clamp(2, 0, 3) == 2',
  '',
].join('\n');

let tmp: string;
let task: RunnableTask;
beforeAll(async () => {
  tmp = await mkdtemp(join(tmpdir(), 'coding-agent-synth-'));
  const repo = join(tmp, 'repo');
  await mkdir(repo);
  await writeFile(join(repo, 'clamp.py'), SOURCE);
  await writeFile(join(repo, 'test_clamp.py'), TESTS);
  const out = join(tmp, 'tasks.jsonl');
  const synth = await new Promise<number | null>((done) =>
    spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        'daemon/cli/main.ts',
        'tasks',
        'synth',
        '--repo',
        repo,
        '--test',
        PYTEST,
        '--max',
        '4',
        '--out',
        out,
      ],
      { cwd: ROOT, stdio: 'ignore' },
    ).on('close', done),
  );
  expect(synth).toBe(0);
  task = JSON.parse((await readFile(out, 'utf8')).split('\n')[0]!);
  // the agent runs in the example's folder: the store by its absolute path
  task.harness_rl.store = join(tmp, 'snapshots');
}, 120_000);
afterAll(async () => {
  if (tmp) await rm(tmp, { recursive: true, force: true });
});

async function rollout(
  steps: ScriptedReply[],
): Promise<{ stdout: string; stderr: string; results: string[] }> {
  const script = (_request: unknown, prompt: { text: string }): ScriptedReply =>
    steps[Math.min(prompt.text.split('<|im_start|>tool\n').length - 1, steps.length - 1)]!;
  const fake = await startFakeVllm({ model: 'toy', script, maxModelLen: 1_000_000 });
  const daemon = await startTestDaemon({ backends: [fake.url] });
  try {
    const created = await daemon.api('POST', '/api/rollouts', {});
    const harness = await runExampleScript('coding-agent', 'main.ts', {
      env: { ...rolloutEnv(created.body, 'toy', task), CODING_AGENT_MAX_TOKENS: '4096' },
    });
    const calls = (await daemon.api('GET', `/api/rollouts/${created.body.id}`)).body.llm_calls;
    const last = calls.at(-1).request.messages as { role: string; content: string }[];
    return { ...harness, results: last.filter((m) => m.role === 'tool').map((m) => m.content) };
  } finally {
    await daemon.close();
    await fake.close();
  }
}

const verify = async (stdout: string) =>
  JSON.parse(
    (await runExampleScript('coding-agent', 'verify.ts', { stdin: JSON.stringify({ task, stdout }) })).stdout,
  );

describe('the coding agent on a synthesised task', () => {
  it('reads the buggy file, writes the fix, runs the tests (0 failed) and its diff scores 1', async () => {
    const file = task.harness_rl.mutation!.file;
    const { stdout, results } = await rollout([
      { tool: { name: 'read_file', arguments: JSON.stringify({ path: file }) } },
      { tool: { name: 'run_tests', arguments: '{}' } },
      { tool: { name: 'write_file', arguments: JSON.stringify({ path: file, content: SOURCE }) } },
      { tool: { name: 'run_tests', arguments: '{}' } },
      { text: 'Fixed.' },
    ]);
    expect(results[0]).not.toBe(SOURCE);
    expect(results[1]).toMatch(
      new RegExp(`^\\d+ passed, ${task.FAIL_TO_PASS.length} failed\\nFAILED ${task.FAIL_TO_PASS[0]}`),
    );
    expect(results[3]).toMatch(/^3 passed, 0 failed$/);
    const line = JSON.parse(stdout.trim().split('\n').at(-1)!);
    expect(line.patch).toContain(`--- a/${file}`);
    expect(await verify(stdout)).toMatchObject({
      reward: 1,
      detail: { reason: '', fail_to_pass: { passed: task.FAIL_TO_PASS.length } },
    });
  }, 180_000);

  it('an agent that changes nothing scores 0, and the verifier names the test that still fails', async () => {
    const { stdout } = await rollout([{ text: 'Looks fine to me.' }]);
    expect(JSON.parse(stdout.trim().split('\n').at(-1)!)).toEqual({ edits: {}, patch: '' });
    const verdict = await verify(stdout);
    expect(verdict.reward).toBe(0);
    expect(verdict.detail.reason).toContain(`(first: ${task.FAIL_TO_PASS[0]}`);
  }, 180_000);
});
