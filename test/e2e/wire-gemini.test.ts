// Google's Gemini API (generateContent, streamGenerateContent?alt=sse) through the REAL proxy in front of
// the fake vLLM, the way Gemini CLI calls it (GOOGLE_GEMINI_BASE_URL = the rollout URL, x-goog-api-key):
// answers in Gemini's shape, every call recorded as wire_api "gemini" with the backend's token ids.
import { describe, expect, it } from 'vitest';
import { parseSse } from '../../daemon/proxy/translate/test-kit';
import { proxyOnFakeVllm } from './proxy-setup';

const env = proxyOnFakeVllm();

async function gemini(method: string, body: unknown, opts: { key?: string; query?: string } = {}) {
  const r = await env.proxy.rollout();
  const res = await fetch(`${env.proxy.url}/r/${r.id}/v1beta/models/toy:${method}${opts.query ?? ''}`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      ...(opts.query ? {} : { 'x-goog-api-key': opts.key ?? r.key }),
    },
    body: JSON.stringify(body),
  });
  return { rollout: r, res, text: await res.text() };
}

const lastProduced = () => {
  const p = env.fake.produced.at(-1);
  if (!p) throw new Error('nothing produced');
  return { prompt_ids: p.prompt_ids, ...p.choices[0], request: p.request };
};

const tools = [
  {
    functionDeclarations: [
      {
        name: 'run_shell_command',
        parametersJsonSchema: { type: 'object', properties: { command: { type: 'string' } } },
      },
    ],
  },
  { googleSearch: {} },
];

describe('Gemini generateContent through the proxy', () => {
  it('answers in Gemini shape and records the backend tokens as a gemini call', async () => {
    const { rollout, res, text } = await gemini('generateContent', {
      systemInstruction: { parts: [{ text: 'Be brief.' }] },
      contents: [{ role: 'user', parts: [{ text: 'hello there' }] }],
    });
    expect(res.status).toBe(200);
    const body = JSON.parse(text);
    expect(body.candidates[0]).toEqual({
      content: { role: 'model', parts: [{ text: 'echo: hello there' }] },
      finishReason: 'STOP',
      index: 0,
    });
    const produced = lastProduced();
    expect(produced.request.messages).toEqual([
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'hello there' },
    ]);
    expect(body.usageMetadata).toMatchObject({
      promptTokenCount: produced.prompt_ids.length,
      candidatesTokenCount: produced.ids.length,
    });
    const [call] = await env.proxy.calls(rollout.id);
    expect(call).toMatchObject({ wire_api: 'gemini', stream: false, status: 'ok', token_source: 'backend' });
    expect(call.prompt_ids).toEqual(produced.prompt_ids);
    expect(call.response_ids).toEqual(produced.ids);
    expect(call.response).toEqual(body);
  });

  it('streamGenerateContent?alt=sse streams a function call; the stored response is what the chunks add up to', async () => {
    // a key in the query string that is not the rollout's: refused in Google's error shape, nothing recorded
    const wrong = await gemini(
      'streamGenerateContent',
      { contents: [{ role: 'user', parts: [{ text: 'use the tool please' }] }], tools },
      { query: '?alt=sse&key=not-the-key' },
    );
    expect(wrong.res.status).toBe(403);
    expect(JSON.parse(wrong.text)).toMatchObject({ error: { code: 403, status: 'PERMISSION_DENIED' } });
    expect(await env.proxy.calls(wrong.rollout.id)).toEqual([]);

    const r = await env.proxy.rollout();
    const sres = await fetch(
      `${env.proxy.url}/r/${r.id}/v1beta/models/toy:streamGenerateContent?alt=sse&key=${r.key}`,
      {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          contents: [{ role: 'user', parts: [{ text: 'use the tool please' }] }],
          tools,
        }),
      },
    );
    expect(sres.status).toBe(200);
    expect(sres.headers.get('content-type')).toMatch(/text\/event-stream/);
    const chunks = parseSse(await sres.text()).map((e) => e.data);
    const parts = chunks.flatMap((c) => c.candidates[0].content.parts);
    const callPart = parts.find((p) => p.functionCall);
    expect(callPart.functionCall).toMatchObject({
      name: 'run_shell_command',
      args: { query: 'use the tool please' },
    });
    expect(lastProduced().request.tools.map((t: any) => t.function.name)).toEqual(['run_shell_command']);
    const [call] = await env.proxy.calls(r.id);
    expect(call).toMatchObject({ wire_api: 'gemini', stream: true, status: 'ok' });
    expect(call.tags).toEqual([expect.stringMatching(/^tool-left-out:googleSearch \(hosted tool/)]);
    const last = chunks.at(-1);
    expect(call.response).toEqual({
      candidates: [
        { content: { role: 'model', parts }, finishReason: last.candidates[0].finishReason, index: 0 },
      ],
      usageMetadata: last.usageMetadata,
      modelVersion: 'toy',
      responseId: last.responseId,
    });
    expect(call.response_ids).toEqual(lastProduced().ids);
  });

  it('an invalid body is a 400 in Google error format, recorded as streamed when it asked to stream', async () => {
    const { rollout, res, text } = await gemini('streamGenerateContent', {
      contents: [{ role: 'user', parts: [{ inlineData: { mimeType: 'image/png', data: '' } }] }],
    });
    expect(res.status).toBe(400);
    expect(JSON.parse(text).error).toMatchObject({ code: 400, status: 'INVALID_ARGUMENT' });
    expect(JSON.parse(text).error.message).toMatch(/inlineData/);
    const [call] = await env.proxy.calls(rollout.id);
    expect(call).toMatchObject({ wire_api: 'gemini', stream: true, status: 'error', http_status: 400 });
  });

  it(':countTokens counts the translated request with the backend tokenizer (not recorded on a run rollout)', async () => {
    const body = {
      systemInstruction: { parts: [{ text: 'Be brief.' }] },
      contents: [{ role: 'user', parts: [{ text: 'hello there' }] }],
    };
    const { rollout, res, text } = await gemini('countTokens', body);
    expect(res.status).toBe(200);
    const { totalTokens } = JSON.parse(text);
    await gemini('generateContent', body);
    expect(totalTokens).toBe(lastProduced().prompt_ids.length);
    // the generateContentRequest form counts the same
    const wrapped = await gemini('countTokens', { generateContentRequest: { model: 'models/toy', ...body } });
    expect(JSON.parse(wrapped.text)).toEqual({ totalTokens });
    expect(await env.proxy.calls(rollout.id)).toEqual([]);
  });

  it('an unknown Gemini method is a 404 in Google error format', async () => {
    const { res, text } = await gemini('embedContent', { content: { parts: [{ text: 'x' }] } });
    expect(res.status).toBe(404);
    expect(JSON.parse(text).error).toMatchObject({ code: 404, status: 'NOT_FOUND' });
  });
});
