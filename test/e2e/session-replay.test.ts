// Claude Code and Codex sessions (fixtures from the public API shapes) replayed with the official SDKs
// through a recording on a vLLM with the real Qwen3 tokenizer and template: every call recorded, side
// calls tagged, the main calls one trajectory whose prompts extend each other token for token (the
// bridge), so they merge into one sample with 0 prefix breaks; with the bridge off the template breaks it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LlmCall } from '../../daemon/protocol/entities';
import { analyzeRollout, buildSamples, trajectoriesFromStore } from '../../daemon/samples';
import { type Qwen3Turn, type Qwen3Vllm, startQwen3Vllm } from '../fixtures/qwen3-vllm';
import { loadSession, replay } from '../fixtures/sessions/replay';
import { startTestProxy, type TestProxy } from './proxy-setup';

const MODEL = 'Qwen/Qwen3-8B';
let backend: Qwen3Vllm;
let proxy: TestProxy;
let next: Qwen3Turn = { text: 'ok' };

beforeAll(async () => {
  backend = await startQwen3Vllm({ model: MODEL, reply: () => next });
  proxy = await startTestProxy();
});
afterAll(async () => {
  await proxy?.close();
  await backend?.close();
});

const isSide = (c: LlmCall) => c.tags.includes('side');
const tokens = (c: LlmCall) => [...(c.prompt_ids ?? []), ...(c.response_ids ?? [])];

async function recordSession(name: 'claude-code' | 'codex') {
  const rec = await proxy.store.createRecording({ name, upstream: { kind: 'vllm', base_url: backend.url } });
  const session = loadSession(name);
  const replayed = await replay(session, { root: proxy.url, apiKey: rec.key, nextReply: (t) => (next = t) });
  const calls = await proxy.store.listRecordingCalls(rec.id);
  return { rec, session, replayed, calls, main: calls.filter((c) => !isSide(c)) };
}

describe.each(['claude-code', 'codex'] as const)('a replayed %s session on a Qwen3-template vLLM', (name) => {
  it('records every call, tags the side calls, and merges the main calls into one sample with 0 prefix breaks', async () => {
    const { rec, session, replayed, calls, main } = await recordSession(name);
    for (const c of calls) expect(c.status, String(c.error)).toBe('ok');
    expect(calls.length).toBe(session.steps.length);
    expect(calls.filter(isSide).length).toBe(replayed.made.side + replayed.made.count_tokens);
    expect(main.length).toBe(replayed.made.main);
    expect(new Set(calls.map((c) => c.rollout_id))).toEqual(new Set([rec.rollout_id]));
    expect(main.map((c) => c.wire_api)).toEqual(main.map(() => session.wire));
    // the first main call is the backend's own, every later one bridged over the side calls between them
    expect(main.map((c) => c.token_source)).toEqual(['backend', ...main.slice(1).map(() => 'bridge')]);
    for (let k = 1; k < main.length; k++) {
      const before = tokens(main[k - 1]);
      expect(main[k].prompt_ids?.slice(0, before.length)).toEqual(before);
    }
    // the records are what the backend got and sampled
    const bridged = backend.produced.filter((p) => p.path === '/v1/completions');
    expect(bridged.length).toBeGreaterThanOrEqual(main.length - 1);
    for (const c of main.slice(1))
      expect(bridged.some((p) => p.ids.join() === c.response_ids?.join())).toBe(true);

    const { stats, prefix_breaks } = await analyzeRollout(proxy.store, rec.rollout_id);
    expect(prefix_breaks).toEqual([]);
    expect(stats).toMatchObject({ samples: 1, prefix_breaks: 0 });
    const rollout = { id: rec.rollout_id, group_id: null, reward: 1 };
    const built = buildSamples(await trajectoriesFromStore(proxy.store, [rollout]), {
      merge: 'exact',
      advantage: 'reinforce',
      loss_agg: 'token-mean',
    });
    const [sample] = built.samples;
    expect(built.samples.length).toBe(1);
    expect([...sample.input_ids]).toEqual(tokens(main.at(-1)!));
    expect(sample.loss_mask.reduce((s, m) => s + m, 0)).toBe(
      main.reduce((s, c) => s + (c.response_ids?.length ?? 0), 0),
    );
    await proxy.store.stopRecording(rec.id);
  });
});
