import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LlmCall } from '../protocol/entities';
import { failureOfError } from '../protocol/failures';
import { storedCall } from '../store/test-calls';
import { commandVerifier, finalOutput, parseVerdict, responseText, type VerifierInput } from './verifier';

describe("a verifier's reward line", () => {
  it('is the last non-empty stdout line: {"reward": x} (with an optional detail) or a bare number', () => {
    expect(parseVerdict('running tests…\n{"reward": 0.5}\n\n')).toEqual({ reward: 0.5 });
    expect(parseVerdict('{"reward": 1, "detail": {"passed": 3}}')).toEqual({
      reward: 1,
      detail: { passed: 3 },
    });
    expect(parseVerdict('3 of 4 passed\n0.75\n')).toEqual({ reward: 0.75 });
    expect(parseVerdict('-1')).toEqual({ reward: -1 });
  });

  it('is no reward when the last line is anything else', () => {
    expect(parseVerdict('{"reward": 1}\nall done\n')).toBeUndefined();
    expect(parseVerdict('{"reward": "1"}')).toBeUndefined();
    expect(parseVerdict('{"score": 1}')).toBeUndefined();
    expect(parseVerdict('[1]')).toBeUndefined();
    expect(parseVerdict('"1"')).toBeUndefined();
    expect(parseVerdict('')).toBeUndefined();
    expect(parseVerdict('1e999')).toBeUndefined();
  });
});

const call = (patch: Partial<LlmCall>): LlmCall =>
  storedCall({ rollout_id: 'r', attempt_id: 'a1', request: {}, response: null, ...patch });

describe("the harness's final output", () => {
  it('is the assistant text of a response in every wire API', () => {
    expect(
      responseText(call({ wire_api: 'chat', response: { choices: [{ message: { content: 'chat 4' } }] } })),
    ).toBe('chat 4');
    expect(
      responseText(
        call({
          wire_api: 'chat',
          response: {
            choices: [
              {
                message: {
                  content: [
                    { type: 'text', text: 'a' },
                    { type: 'text', text: 'b' },
                  ],
                },
              },
            ],
          },
        }),
      ),
    ).toBe('ab');
    expect(responseText(call({ wire_api: 'completions', response: { choices: [{ text: ' 4' }] } }))).toBe(
      ' 4',
    );
    expect(
      responseText(
        call({
          wire_api: 'messages',
          response: {
            content: [
              { type: 'thinking', thinking: 'hm' },
              { type: 'text', text: 'The answer is 4' },
              { type: 'tool_use', id: 't', name: 'calc', input: {} },
            ],
          },
        }),
      ),
    ).toBe('The answer is 4');
    expect(
      responseText(
        call({
          wire_api: 'responses',
          response: {
            output: [
              { type: 'reasoning', summary: [] },
              { type: 'message', content: [{ type: 'output_text', text: 'resp 4' }] },
            ],
          },
        }),
      ),
    ).toBe('resp 4');
    expect(
      responseText(
        call({ wire_api: 'chat', response: { choices: [{ message: { content: null, tool_calls: [] } }] } }),
      ),
    ).toBe('');
  });

  it('comes from the last successful call of the attempt, leaving out side calls; null without one', () => {
    const text = (t: string) => ({ choices: [{ message: { content: t } }] });
    const calls = [
      call({ seq: 0, attempt_id: 'a1', response: text('first attempt') }),
      call({ seq: 1, attempt_id: 'a2', response: text('draft') }),
      call({ seq: 2, attempt_id: 'a2', response: text('final') }),
      call({ seq: 3, attempt_id: 'a2', response: text('a title'), tags: ['side'] }),
      call({ seq: 4, attempt_id: 'a2', response: null, status: 'error', error: 'backend 500' }),
    ];
    expect(finalOutput(calls, 'a2')).toBe('final');
    expect(finalOutput(calls, 'a1')).toBe('first attempt');
    expect(finalOutput([], 'a1')).toBeNull();
    expect(finalOutput([calls[4]!], 'a2')).toBeNull();
  });
});

describe('a verifier command', () => {
  let dir: string;
  const input: VerifierInput = {
    run_id: 'run_1',
    rollout_id: 'rol_1',
    attempt_id: 'att_1',
    task: { question: '2+2', answer: '4' },
    output: 'The answer is 4',
    stdout: 'harness log\n',
    harness_reward: 0.1,
  };
  const never = new AbortController().signal;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'verifier-test-'));
    // Reads the input from stdin, checks the file and the env agree with it, prints a reward.
    await writeFile(
      join(dir, 'check.mjs'),
      `import { readFileSync } from 'node:fs';
const stdin = JSON.parse(readFileSync(0, 'utf8'));
const file = JSON.parse(readFileSync(process.env.HARNESS_RL_VERIFY_INPUT, 'utf8'));
const task = JSON.parse(process.env.HARNESS_RL_TASK);
const same = JSON.stringify(stdin) === JSON.stringify(file) && task.answer === stdin.task.answer
  && process.env.HARNESS_RL_ROLLOUT_ID === stdin.rollout_id && process.env.HARNESS_RL_ATTEMPT_ID === stdin.attempt_id
  && process.env.HARNESS_RL_RUN_ID === stdin.run_id;
console.log('checking', stdin.rollout_id);
console.log(JSON.stringify({ reward: same && stdin.output.endsWith(task.answer) ? 1 : 0, detail: { cwd: process.cwd(), stdout: stdin.stdout } }));
`,
    );
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('gets the input on stdin, in a file and in its env, runs in its folder and gives the reward it prints', async () => {
    const verify = commandVerifier([process.execPath, 'check.mjs'], { cwd: dir });
    const verdict = await verify(input, never);
    expect(verdict.reward).toBe(1);
    expect(verdict.detail).toMatchObject({ stdout: 'harness log\n' });
    expect((verdict.detail as { cwd: string }).cwd.endsWith(dir.split('/').at(-1)!)).toBe(true);
    expect(await verify({ ...input, output: 'The answer is 5' }, never)).toMatchObject({ reward: 0 });
  });

  it('that exits nonzero is an error with its exit code and stderr, even after printing a reward', async () => {
    const verify = commandVerifier([
      process.execPath,
      '-e',
      'console.log(JSON.stringify({reward: 1})); console.error("tests crashed"); process.exit(2)',
    ]);
    await expect(verify(input, never)).rejects.toThrow(/exit code 2: tests crashed/);
  });

  it('that prints no reward is an error quoting its last line', async () => {
    await expect(
      commandVerifier([process.execPath, '-e', 'console.log("looks right to me")'])(input, never),
    ).rejects.toThrow(/printed no reward.*"looks right to me"/);
    await expect(commandVerifier([process.execPath, '-e', ''])(input, never)).rejects.toThrow(
      /printed nothing/,
    );
  });

  it('that does not read its stdin still works', async () => {
    const verify = commandVerifier([process.execPath, '-e', 'console.log(0.25)']);
    expect(await verify({ ...input, stdout: 'x'.repeat(200_000) }, never)).toEqual({ reward: 0.25 });
  });

  it('that exits 75 (its sandbox could not start) fails the attempt as infrastructure, not as the verifier', async () => {
    const failed = await commandVerifier([process.execPath, '-e', 'process.exit(75)'])(input, never).catch(
      (err: unknown) => failureOfError(err),
    );
    expect(failed).toEqual({ kind: 'infrastructure', reason: 'reported' });
  });

  it('that cannot start says so', async () => {
    await expect(commandVerifier(['/nonexistent/verifier'])(input, never)).rejects.toThrow(
      /could not start \/nonexistent\/verifier/,
    );
  });

  it('is killed when its attempt is aborted', async () => {
    const controller = new AbortController();
    const verify = commandVerifier([process.execPath, '-e', 'setTimeout(() => console.log(1), 60_000)']);
    const running = verify(input, controller.signal);
    setTimeout(() => controller.abort(new Error('verifier timed out after 1s')), 200);
    await expect(running).rejects.toThrow('verifier timed out after 1s');
  });
});
