// examples/retrieval-agent through a real daemon: its run.yaml on the reference engine with `harness-rl
// worker` (the tiny model does not search, so the mechanics are what is checked: every rollout rewarded
// with the F1 its harness printed, the steps advance), and the agent's search tool on a scripted
// tool-calling backend, rewarded 1 for the gold answer and 0 for a wrong one.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ScriptedReply, startFakeVllm } from '../fixtures/fake-vllm';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon';
import { rolloutEnv, runExampleScript, workSmallExampleRun } from '../helpers/examples';

describe('the retrieval agent example on the reference engine', () => {
  let daemon: TestDaemon;
  beforeAll(async () => {
    daemon = await startTestDaemon();
  });
  afterAll(async () => {
    await daemon?.close();
  });

  it('runs its run.yaml through harness-rl worker: every rollout rewarded, the steps advance', async () => {
    const run = await workSmallExampleRun(daemon, 'retrieval-agent', { RETRIEVAL_AGENT_MAX_TOKENS: '16' });
    expect(await daemon.ctx.store.getRun(run.id)).toMatchObject({ status: 'finished', step: 2 });
    const rollouts = (await daemon.ctx.store.listRollouts({ run_id: run.id })).items;
    expect(rollouts).toHaveLength(4);
    for (const r of rollouts) {
      expect(r.status).toBe('succeeded');
      expect(await daemon.ctx.store.listRewards(r.id)).toMatchObject([{ source: 'harness' }]);
      expect(r.reward).toBeGreaterThanOrEqual(0);
      expect(r.reward).toBeLessThanOrEqual(1);
      expect((await daemon.ctx.store.listLlmCalls(r.id)).length).toBeGreaterThan(0);
    }
  });
});

describe('the retrieval agent on a tool-calling backend (scripted)', () => {
  const task = {
    id: 'q-keeper',
    question: 'Who first lit the lamp of the Varnholm lighthouse?',
    answers: ['Edda Lund'],
  };
  let answer = '';
  /** A search first, then `answer` (a bridged call gets the tool call as Hermes text, as from vLLM). */
  const script = (request: Record<string, any>, prompt: { text: string }): ScriptedReply => {
    if (prompt.text.includes('<|im_start|>tool\n')) return { text: answer };
    const call = { name: 'search', arguments: { query: 'lighthouse lamp first lit' } };
    return request.prompt === undefined
      ? { tool: { name: call.name, arguments: JSON.stringify(call.arguments) } }
      : { text: `<tool_call>${JSON.stringify(call)}</tool_call>` };
  };

  it('searches the corpus, reads the passage, and is rewarded by its answer against the gold one', async () => {
    const fake = await startFakeVllm({ model: 'toy', script, maxModelLen: 1_000_000 });
    const daemon = await startTestDaemon({ backends: [fake.url] });
    try {
      for (const [given, reward] of [
        ['Edda Lund', 1],
        ['the keeper', 0],
      ] as const) {
        answer = given;
        const rollout = await daemon.api('POST', '/api/rollouts', {});
        expect(rollout.status).toBe(201);
        const ran = await runExampleScript('retrieval-agent', 'main.ts', {
          env: rolloutEnv(rollout.body, 'toy', task),
        });
        expect(JSON.parse(ran.stdout.trim())).toEqual({ reward });
        expect(ran.stderr).toContain(`2 turns, searches ["{\\"query\\":\\"lighthouse lamp first lit\\"}"]`);
        const calls = (await daemon.api('GET', `/api/rollouts/${rollout.body.id}`)).body.llm_calls;
        expect(calls).toHaveLength(2);
        const [, tool] = calls[1].request.messages.filter((m: { role: string }) => m.role !== 'user');
        expect(tool).toMatchObject({
          role: 'tool',
          content: expect.stringMatching(/^\[lighthouse\] .*Edda Lund/),
        });
      }
    } finally {
      await daemon.close();
      await fake.close();
    }
  });
});
