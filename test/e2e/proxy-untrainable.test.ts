// Answers a harness can use but a trainer cannot are recorded as such, streamed or not: 48 token ids
// with 45 logprobs, no token ids, no choices. The harness still gets its 200; the call's status says
// what is missing and the samples stage leaves it out, counted by that reason.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildSamples, trajectoryFromCalls } from '../../daemon/samples';
import { startTestProxy, type TestProxy } from './proxy-setup';

const PROMPT = [1, 2, 3, 4];
const IDS = Array.from({ length: 48 }, (_, i) => 100 + i);
const entries = (n: number) => IDS.slice(0, n).map((id) => ({ token: `t${id}`, logprob: -0.5, bytes: [] }));

/** The whole answer each model gives (vLLM's chat shape, or what the model name says is missing). */
function answerOf(model: string): Record<string, unknown> {
  const head = { id: 'chatcmpl-1', object: 'chat.completion', created: 1, model };
  const message = { role: 'assistant', content: 'done' };
  const choice = { index: 0, message, finish_reason: 'stop' };
  if (model === 'no-choices') return { ...head, choices: [] };
  if (model === 'no-ids') return { ...head, choices: [{ ...choice, logprobs: { content: entries(48) } }] };
  const n = model === 'short-logprobs' ? 45 : 48;
  return {
    ...head,
    prompt_token_ids: PROMPT,
    choices: [{ ...choice, logprobs: { content: entries(n) }, token_ids: IDS }],
  };
}

/** The same answer as vLLM streams it: the prompt ids first, then the tokens in two chunks. */
function chunksOf(model: string): Record<string, unknown>[] {
  const head = { id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1, model };
  if (model === 'no-choices') return [{ ...head, choices: [] }];
  const ids = model !== 'no-ids';
  const n = model === 'short-logprobs' ? 45 : 48;
  const part = (from: number, to: number, last: boolean) => ({
    ...head,
    choices: [
      {
        index: 0,
        delta: { content: last ? 'ne' : 'do' },
        logprobs: { content: entries(n).slice(from, to) },
        finish_reason: last ? 'stop' : null,
        ...(ids ? { token_ids: IDS.slice(from, Math.min(to, 48)) } : {}),
      },
    ],
  });
  return [
    {
      ...head,
      ...(ids ? { prompt_token_ids: PROMPT } : {}),
      choices: [{ index: 0, delta: { role: 'assistant' } }],
    },
    part(0, 24, false),
    part(24, 48, true),
  ];
}

const MODELS = ['good', 'short-logprobs', 'no-ids', 'no-choices'];
let backend: Server;
let proxy: TestProxy;

beforeAll(async () => {
  backend = createServer((req, res) => {
    let raw = '';
    req.on('data', (c) => {
      raw += c;
    });
    req.on('end', () => {
      if (req.url?.startsWith('/v1/models')) {
        res.writeHead(200, { 'content-type': 'application/json' });
        return res.end(
          JSON.stringify({ object: 'list', data: MODELS.map((id) => ({ id, object: 'model' })) }),
        );
      }
      const body = JSON.parse(raw);
      if (!body.stream) {
        res.writeHead(200, { 'content-type': 'application/json' });
        return res.end(JSON.stringify(answerOf(body.model)));
      }
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      for (const c of chunksOf(body.model)) res.write(`data: ${JSON.stringify(c)}\n\n`);
      res.end('data: [DONE]\n\n');
    });
  });
  await new Promise<void>((resolve) => backend.listen(0, '127.0.0.1', resolve));
  proxy = await startTestProxy({ backends: [`http://127.0.0.1:${(backend.address() as AddressInfo).port}`] });
});
afterAll(async () => {
  await proxy?.close();
  await new Promise((r) => backend?.close(r));
});

describe('answers that cannot be trained on', () => {
  it('are recorded with a status naming what is missing, streamed and not alike, and answered 200', async () => {
    const r = await proxy.rollout({ tito: false });
    for (const model of MODELS)
      for (const stream of [false, true]) {
        const res = await fetch(`${r.baseURL}/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${r.key}` },
          body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }], stream }),
        });
        expect(res.status).toBe(200);
        await res.text();
      }
    const calls = await proxy.calls(r.id);
    const seen = calls.map((c) => ({
      stream: c.stream,
      status: c.status,
      error: c.error,
      prompt: c.prompt_ids?.length ?? null,
      response: c.response_ids?.length ?? null,
      logprobs: c.response_logprobs?.length ?? null,
    }));
    const expected = [
      { status: 'ok', error: null, prompt: 4, response: 48, logprobs: 48 },
      {
        status: 'logprobs_mismatch',
        error: "not trainable: the backend's answer has 48 response token ids but 45 logprobs",
        prompt: 4,
        response: 48,
        logprobs: 45,
      },
      {
        status: 'no_token_ids',
        error: "not trainable: the backend's answer carries no prompt or response token ids",
        prompt: null,
        response: null,
        logprobs: 48,
      },
      {
        status: 'no_choices',
        error: 'not trainable: the backend answered with no choices',
        prompt: null,
        response: null,
        logprobs: null,
      },
    ];
    expect(seen).toEqual(expected.flatMap((e) => [false, true].map((stream) => ({ stream, ...e }))));

    // The samples stage keeps the two good calls and counts the others by reason.
    const trajectory = trajectoryFromCalls({ id: r.id, group_id: null, reward: 1 }, calls);
    expect(trajectory.calls.length).toBe(2);
    expect(trajectory.excluded_calls).toEqual({ logprobs_mismatch: 2, no_token_ids: 2, no_choices: 2 });
    const built = buildSamples([trajectory], { merge: 'exact', advantage: 'grpo', loss_agg: 'token-mean' });
    expect(built.summary.excluded_calls).toEqual({ logprobs_mismatch: 2, no_token_ids: 2, no_choices: 2 });
  });
});
