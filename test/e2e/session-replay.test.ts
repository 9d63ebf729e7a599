// Claude Code and Codex sessions (fixtures from the public API shapes) replayed with the official SDKs
// through a recording on a vLLM with the real Qwen3 tokenizer and template, and on the proxy's fake vLLM
// (byte tokens, a ChatML template): every call recorded, side calls tagged, the main calls one trajectory
// whose prompts extend each other token for token (the bridge), so they merge into one sample with 0
// prefix breaks; with the bridge off the Qwen3 template breaks it. (The reference engine's 512-token
// context holds none of these sessions' prompts.)
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ReferenceEngine, startReferenceEngine } from '../../daemon/engine';
import type { LlmCall } from '../../daemon/protocol/entities';
import { analyzeRollout, buildSamples, trajectoriesFromStore } from '../../daemon/samples';
import { localQwen3Tokenizer } from '../../daemon/tokenize/qwen3';
import { type FakeVllm, type ScriptedReply, startFakeVllm } from '../fixtures/fake-vllm';
import { type Qwen3Turn, type Qwen3Vllm, startQwen3Vllm } from '../fixtures/qwen3-vllm';
import { loadSession, replay } from '../fixtures/sessions/replay';
import { startTestProxy, type TestProxy } from './proxy-setup';

let qwen3: Qwen3Vllm;
let fake: FakeVllm;
let proxy: TestProxy;
/** What the backend samples next (the fake vLLM has no reasoning: it answers the text and tool calls). */
let next: Qwen3Turn = { text: 'ok' };

function scripted(turn: Qwen3Turn): ScriptedReply {
  const tools = (turn.tool_calls ?? []).map((c) => ({
    name: c.name,
    arguments: JSON.stringify(c.arguments),
  }));
  return tools.length ? { text: turn.text, tools } : { text: turn.text ?? '' };
}

beforeAll(async () => {
  qwen3 = await startQwen3Vllm({ model: 'Qwen/Qwen3-8B', reply: () => next });
  fake = await startFakeVllm({ model: 'toy', script: () => scripted(next) });
  proxy = await startTestProxy();
});
afterAll(async () => {
  await proxy?.close();
  await qwen3?.close();
  await fake?.close();
});

/** The backends a session is replayed on: their URL and the response tokens they sampled for token prompts. */
const backends = {
  'a Qwen3-template vLLM': () => ({
    url: qwen3.url,
    bridged: () => qwen3.produced.filter((p) => p.path === '/v1/completions').map((p) => p.ids),
  }),
  'the fake vLLM': () => ({
    url: fake.url,
    bridged: () => fake.produced.filter((p) => p.path === '/v1/completions').map((p) => p.choices[0].ids),
  }),
};

const isSide = (c: LlmCall) => c.tags.includes('side');
const tokens = (c: LlmCall) => [...(c.prompt_ids ?? []), ...(c.response_ids ?? [])];

async function recordSession(name: 'claude-code' | 'codex', options: { url?: string; tito?: boolean } = {}) {
  const rec = await proxy.store.createRecording({
    name,
    upstream: { kind: 'vllm', base_url: options.url ?? qwen3.url },
    ...(options.tito === undefined ? {} : { tito: options.tito }),
  });
  const session = loadSession(name);
  const replayed = await replay(session, { root: proxy.url, apiKey: rec.key, nextReply: (t) => (next = t) });
  const calls = await proxy.store.listRecordingCalls(rec.id);
  return { rec, session, replayed, calls, main: calls.filter((c) => !isSide(c)) };
}

describe.each(
  (['claude-code', 'codex'] as const).flatMap((name) =>
    (Object.keys(backends) as (keyof typeof backends)[]).map((on) => [name, on] as const),
  ),
)('a replayed %s session on %s', (name, on) => {
  it('records every call, tags the side calls, and merges the main calls into one sample with 0 prefix breaks', async () => {
    const backend = backends[on]();
    const { rec, session, replayed, calls, main } = await recordSession(name, { url: backend.url });
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
    const bridged = backend.bridged();
    expect(bridged.length).toBeGreaterThanOrEqual(main.length - 1);
    for (const c of main.slice(1))
      expect(bridged.some((ids) => ids.join() === c.response_ids?.join())).toBe(true);

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

describe('what the bridge saves a replayed Claude Code session from', () => {
  it('with tito off the Qwen3 template re-renders the sampled turns (spacing around tool calls, thinking dropped after a new request): template prefix breaks', async () => {
    const { rec, main } = await recordSession('claude-code', { tito: false });
    expect(main.map((c) => [c.token_source, c.bridge])).toEqual(main.map(() => ['backend', null]));
    const qwen = localQwen3Tokenizer();
    const decode = (ids: number[]) => qwen.decode(ids) as string;
    const { stats, prefix_breaks } = await analyzeRollout(proxy.store, rec.rollout_id, { decode });
    expect(stats.prefix_breaks).toBe(prefix_breaks.length);
    expect(prefix_breaks.length).toBeGreaterThan(0);
    for (const b of prefix_breaks) {
      expect(b.class).toBe('template');
      expect(b.change).toBeUndefined();
    }
    // after the user's second request the template leaves the earlier turns' thinking out
    expect(prefix_breaks.some((b) => /^\s*<think>/.test(b.expected_text ?? ''))).toBe(true);
    await proxy.store.stopRecording(rec.id);
  });

  it('a history the agent edited falls back and its prefix break names the message and how it changed', async () => {
    const { rec, session, replayed } = await recordSession('claude-code');
    // the agent resends its first request's text with a trailing space, then asks on
    const history = structuredClone(replayed.history) as { role: string; content: { text?: string }[] }[];
    history[0].content[1].text = `${history[0].content[1].text} `;
    history.push({
      role: 'user',
      content: [{ text: 'Thanks, commit it.', type: 'text' } as { text: string }],
    });
    next = { text: 'Committed.' };
    const res = await fetch(`${proxy.url}/v1/messages`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-api-key': rec.key,
        'anthropic-version': '2023-06-01',
      },
      body: JSON.stringify({ ...session.main, stream: false, messages: history }),
    });
    expect(res.status).toBe(200);
    const last = (await proxy.store.listRecordingCalls(rec.id)).at(-1)!;
    expect(last.token_source).toBe('backend');
    // message 0 is the system prompt the Messages API's `system` became
    const change = { index: 1, role: 'user', change: 'whitespace' };
    expect(last.bridge).toMatchObject({
      fallback: expect.stringMatching(/^history edited: message 1 \(user\)/),
      change,
    });
    const { prefix_breaks } = await analyzeRollout(proxy.store, rec.rollout_id);
    expect(prefix_breaks).toHaveLength(1);
    expect(prefix_breaks[0]).toMatchObject({ change, bridge_fallback: expect.stringMatching(/whitespace/) });
    await proxy.store.stopRecording(rec.id);
  });
});

describe('a short session on the reference engine (its 512-token context holds none of the sessions above)', () => {
  let engine: ReferenceEngine;
  let dir: string;
  let onEngine: TestProxy;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'harness-rl-replay-'));
    engine = await startReferenceEngine({ dataDir: dir, resume: false });
    onEngine = await startTestProxy({ backends: [engine.url] });
  });
  afterAll(async () => {
    await onEngine?.close();
    await engine?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('a recording on the reference upstream bridges each resent turn: one sample, 0 prefix breaks', async () => {
    const rec = await onEngine.store.createRecording({ name: 'reference', upstream: { kind: 'reference' } });
    const client = new Anthropic({ apiKey: rec.key, baseURL: onEngine.url, maxRetries: 0 });
    const messages: Anthropic.MessageParam[] = [];
    for (const text of ['Add 2 and 3.', 'Now times 4.', 'Thanks.']) {
      messages.push({ role: 'user', content: text });
      const reply = await client.messages
        .stream({ model: 'claude-sonnet-4-5', max_tokens: 12, system: 'Be brief.', messages })
        .finalMessage();
      messages.push({ role: 'assistant', content: reply.content });
    }
    const calls = await onEngine.store.listRecordingCalls(rec.id);
    expect(calls.map((c) => [c.status, c.token_source])).toEqual([
      ['ok', 'backend'],
      ['ok', 'bridge'],
      ['ok', 'bridge'],
    ]);
    const { stats } = await analyzeRollout(onEngine.store, rec.rollout_id);
    expect(stats).toMatchObject({ samples: 1, prefix_breaks: 0 });
    await onEngine.store.stopRecording(rec.id);
  });
});
