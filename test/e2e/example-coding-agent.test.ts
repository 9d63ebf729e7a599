// examples/coding-agent through a real daemon: its run.yaml on the reference engine with `harness-rl
// worker` (the tiny model calls no tools, so the mechanics are what is checked: every rollout's edits
// verified in a sandboxed copy, the verifier's reward recorded, the steps advance); the verifier's reward
// for a known-good and a known-bad edit; and the agent's tool calls on a scripted tool-calling backend.
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runWorker } from '../../daemon/worker/worker';
import { FIXES } from '../../examples/coding-agent/known-fixes';
import { bwrapWorks } from '../../examples/coding-agent/sandbox';
import { type ScriptedReply, startFakeVllm } from '../fixtures/fake-vllm';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon';
import {
  createExampleRun,
  exampleDir,
  rolloutEnv,
  runExampleScript,
  workSmallExampleRun,
} from '../helpers/examples';

const createRun = (daemon: TestDaemon, patch: (c: Record<string, any>) => void) =>
  createExampleRun(daemon, 'coding-agent', patch);

describe('the coding agent example on the reference engine', () => {
  let daemon: TestDaemon;
  beforeAll(async () => {
    daemon = await startTestDaemon();
  });
  afterAll(async () => {
    await daemon?.close();
  });

  it('runs its run.yaml through harness-rl worker: every rollout verified and rewarded, the steps advance', async () => {
    const created = await workSmallExampleRun(daemon, 'coding-agent', { CODING_AGENT_MAX_TOKENS: '32' });
    expect(await daemon.ctx.store.getRun(created.id)).toMatchObject({ status: 'finished', step: 2 });
    const rollouts = (await daemon.ctx.store.listRollouts({ run_id: created.id })).items;
    expect(rollouts).toHaveLength(4);
    for (const r of rollouts) {
      const attempts = await daemon.ctx.store.listAttempts(r.id);
      expect(attempts.map((a) => [a.status, a.error])).toEqual([['succeeded', null]]);
      expect((await daemon.ctx.store.listLlmCalls(r.id)).length).toBeGreaterThan(0);
      // The tiny model makes no edits: the shipped bug stays and its tests fail (1 of 3 passes).
      const [reward] = await daemon.ctx.store.listRewards(r.id);
      expect(reward).toMatchObject({
        source: 'verifier',
        value: 1 / 3,
        detail: { passed: 1, failed: 2, timed_out: false, sandboxed: bwrapWorks().ok, edited: [] },
      });
    }
  });

  it("records the verifier's reward 1 for a known-good edit and 0 for one that breaks the module", async () => {
    const created = await createRun(daemon, (c) => {
      c.algorithm.n = 2;
      c.schedule.steps = 1;
      c.schedule.groups_per_step = 2;
    });
    // An SDK harness: one call of the model, then the edits line a good fix (the first rollout of each
    // group to start) or a broken one (the second) would print; the run's own verifier (run.yaml) judges.
    const started = new Map<string | null, number>();
    const summary = await runWorker({
      daemonUrl: daemon.url,
      token: daemon.token,
      runId: created.id,
      concurrency: 4,
      cwd: exampleDir('coding-agent'),
      rollout: async (ctx) => {
        const client = new OpenAI({ baseURL: ctx.openai_base_url, apiKey: ctx.key, maxRetries: 0 });
        await client.chat.completions.create({
          model: ctx.model,
          messages: [{ role: 'user', content: 'fix it' }],
          max_tokens: 2,
        });
        const task = ctx.input as { id: string };
        const [[path, fix]] = Object.entries(FIXES[task.id]!);
        const nth = started.get(ctx.rollout.group_id) ?? 0;
        started.set(ctx.rollout.group_id, nth + 1);
        const edits = { [path!]: nth === 0 ? fix : 'export function (' };
        return { stdout: `editing\n${JSON.stringify({ edits })}\n` };
      },
    });
    expect(summary).toMatchObject({ succeeded: 4, failed: 0 });
    const rollouts = (await daemon.ctx.store.listRollouts({ run_id: created.id })).items;
    const byGroup = new Map<string | null, number[]>();
    for (const r of rollouts) {
      const [reward] = await daemon.ctx.store.listRewards(r.id);
      expect(reward).toMatchObject({ source: 'verifier', detail: { edited: [expect.any(String)] } });
      expect(reward!.detail).toMatchObject({ passed: reward!.value === 1 ? 3 : 0 });
      expect(r.reward).toBe(reward!.value);
      byGroup.set(r.group_id, [...(byGroup.get(r.group_id) ?? []), reward!.value]);
    }
    expect([...byGroup.values()].map((v) => v.sort())).toEqual([
      [0, 1],
      [0, 1],
    ]);
  });
});

describe('the coding agent on a tool-calling backend (scripted)', () => {
  const fix = FIXES.clamp!['src/clamp.mjs']!;
  /** The agent's calls in order: list, read, write the fix, run the tests, then a final text. */
  const steps: ScriptedReply[] = [
    { tool: { name: 'list_files', arguments: '{}' } },
    { tool: { name: 'read_file', arguments: JSON.stringify({ path: 'src/clamp.mjs' }) } },
    { tool: { name: 'write_file', arguments: JSON.stringify({ path: 'src/clamp.mjs', content: fix }) } },
    { tool: { name: 'run_tests', arguments: '{}' } },
    { text: 'Fixed: clamp uses hi for the upper bound.' },
  ];
  /**
   * The step after as many tool results as the prompt holds. A call the token bridge sends as token
   * ids (/v1/completions, after the first) gets the tool call as text in Hermes form, which the bridge
   * parses back into tool_calls, as with vLLM.
   */
  const script = (request: Record<string, any>, prompt: { text: string }): ScriptedReply => {
    const step = steps[prompt.text.split('<|im_start|>tool\n').length - 1]!;
    if (request.prompt === undefined || !('tool' in step)) return step;
    const call = { name: step.tool.name, arguments: JSON.parse(step.tool.arguments) };
    return { text: `<tool_call>${JSON.stringify(call)}</tool_call>` };
  };

  it('executes list_files, read_file, write_file and run_tests in its copy, and hands on the fix', async () => {
    const fake = await startFakeVllm({ model: 'toy', script, maxModelLen: 1_000_000 });
    const daemon = await startTestDaemon({ backends: [fake.url] });
    try {
      const rollout = await daemon.api('POST', '/api/rollouts', {});
      expect(rollout.status).toBe(201);
      const task = { id: 'clamp', issue: 'clamp(5, 0, 3) gives 0', test: 'test/clamp.test.mjs' };
      const harness = await runExampleScript('coding-agent', 'main.ts', {
        env: rolloutEnv(rollout.body, 'toy', task),
      });
      expect(harness.stderr).toContain(
        'coding-agent: 5 turns, tool calls: list_files, read_file, write_file, run_tests',
      );
      const stdout = harness.stdout;
      expect(JSON.parse(stdout.trim())).toEqual({ edits: { 'src/clamp.mjs': fix } });
      // Every call went through the proxy (the later ones bridged); each tool's result is in the next prompt.
      const calls = (await daemon.api('GET', `/api/rollouts/${rollout.body.id}`)).body.llm_calls;
      expect(calls).toHaveLength(5);
      const lastPrompt = calls.at(-1).request.messages as { role: string; content: string }[];
      const results = lastPrompt.filter((m) => m.role === 'tool').map((m) => m.content);
      expect(results[0]).toContain('test/clamp.test.mjs');
      expect(results[1]).toContain('Math.min(x, lo)');
      expect(results[2]).toBe('wrote src/clamp.mjs');
      expect(results[3]).toMatch(/^3 passed, 0 failed/);
      // The verifier command on what the harness printed.
      const verified = await runExampleScript('coding-agent', 'verify.ts', {
        stdin: JSON.stringify({ task, stdout }),
      });
      expect(JSON.parse(verified.stdout.trim())).toMatchObject({
        reward: 1,
        detail: { passed: 3, edited: ['src/clamp.mjs'] },
      });
    } finally {
      await daemon.close();
      await fake.close();
    }
  });
});
