// The reference engine's generation routes: a chat or text completion sampled token by token from one
// weight version, answered whole or streamed (per-token logprobs, token ids, usage), as vLLM answers.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { z } from 'zod';
import { advance, type ChoiceState, type SamplingParams, startChoices, takeDelta } from './generate';
import { sendJson, sse, startSse } from './http';
import type { Model } from './model';
import type { ChatRequest, CompletionRequest } from './requests';
import { tokenBytes, tokenString } from './tokenizer';

let nextId = 1;

function chatLogprob(c: ChoiceState, i: number) {
  const id = c.tokens[i];
  return {
    token: tokenString(id),
    logprob: c.logprobs[i],
    bytes: tokenBytes(id),
    top_logprobs: (c.top[i] ?? []).map((t) => ({
      token: tokenString(t.id),
      logprob: t.logprob,
      bytes: tokenBytes(t.id),
    })),
  };
}

function completionLogprobs(c: ChoiceState, from: number, to: number, textOffset: number) {
  const tokens: string[] = [];
  const lps: number[] = [];
  const tops: Record<string, number>[] = [];
  const offsets: number[] = [];
  let off = textOffset;
  for (let i = from; i < to; i++) {
    const s = tokenString(c.tokens[i]);
    tokens.push(s);
    lps.push(c.logprobs[i]);
    tops.push(Object.fromEntries((c.top[i] ?? []).map((t) => [tokenString(t.id), t.logprob])));
    offsets.push(off);
    off += s.length;
  }
  return { tokens, token_logprobs: lps, top_logprobs: tops, text_offset: offsets };
}

/** Prompt and generated token counts, as the OpenAI `usage` field. */
function usageOf(promptTokens: number, choices: ChoiceState[]) {
  const completion = choices.reduce((s, c) => s + c.tokens.length, 0);
  return {
    prompt_tokens: promptTokens,
    completion_tokens: completion,
    total_tokens: promptTokens + completion,
  };
}

/** What every answer of one request repeats: its id, when it was made, the served name and weight version. */
interface AnswerHead {
  id: string;
  created: number;
  name: string;
  version: number;
}

/** A whole (non-streamed) chat completion's body. */
function chatBody(
  h: AnswerHead,
  choices: ChoiceState[],
  prompt: number[],
  wantIds: boolean,
  wantLp: boolean,
) {
  return {
    id: h.id,
    object: 'chat.completion',
    created: h.created,
    model: h.name,
    model_version: h.version,
    choices: choices.map((c) => ({
      index: c.index,
      message: { role: 'assistant', content: c.text, tool_calls: [] },
      logprobs: wantLp ? { content: c.tokens.map((_, i) => chatLogprob(c, i)) } : null,
      finish_reason: c.finish,
      stop_reason: c.stopReason,
      ...(wantIds ? { token_ids: c.tokens } : {}),
    })),
    usage: usageOf(prompt.length, choices),
    ...(wantIds ? { prompt_token_ids: prompt } : {}),
  };
}

/** A whole (non-streamed) text completion's body: every prompt's choices, numbered across prompts. */
function completionBody(
  h: AnswerHead,
  all: { c: ChoiceState; prompt: number[] }[],
  prompts: number[][],
  promptTokens: number,
  wantIds: boolean,
  wantLp: boolean,
) {
  return {
    id: h.id,
    object: 'text_completion',
    created: h.created,
    model: h.name,
    model_version: h.version,
    choices: all.map(({ c, prompt }) => ({
      index: c.index,
      text: c.text,
      logprobs: wantLp ? completionLogprobs(c, 0, c.tokens.length, 0) : null,
      finish_reason: c.finish,
      stop_reason: c.stopReason,
      ...(wantIds ? { prompt_token_ids: prompt, token_ids: c.tokens } : {}),
    })),
    usage: usageOf(
      promptTokens,
      all.map((x) => x.c),
    ),
    ...(wantIds ? { prompt_token_ids: prompts[0] } : {}),
  };
}

const pause = () => new Promise<void>((r) => setImmediate(r));

export async function chat(
  res: ServerResponse,
  req: IncomingMessage,
  model: Model,
  version: number,
  name: string,
  r: z.infer<typeof ChatRequest>,
  prompt: number[],
  params: SamplingParams,
): Promise<void> {
  const id = `chatcmpl-${nextId++}`;
  const created = Math.floor(Date.now() / 1000);
  const choices = startChoices(model, prompt, params);
  const wantIds = r.return_token_ids === true;
  const wantLp = r.logprobs === true;
  if (!r.stream) {
    for (const c of choices) while (!c.finish) advance(model, c, params);
    return sendJson(
      res,
      200,
      chatBody({ id, created, name, version }, choices, prompt, wantIds, wantLp),
      version,
    );
  }
  const conn = startSse(req, res, version);
  const base = { id, object: 'chat.completion.chunk', created, model: name, model_version: version };
  sse(res, {
    ...base,
    choices: choices.map((c) => ({
      index: c.index,
      delta: { role: 'assistant', content: '' },
      logprobs: null,
      finish_reason: null,
      ...(wantIds ? { token_ids: [] } : {}),
    })),
    ...(wantIds ? { prompt_token_ids: prompt } : {}),
  });
  while (!conn.closed && choices.some((c) => !c.finish)) {
    for (const c of choices) {
      if (c.finish) continue;
      const i = c.tokens.length;
      advance(model, c, params);
      const delta = takeDelta(c, params);
      sse(res, {
        ...base,
        choices: [
          {
            index: c.index,
            delta: { content: delta },
            logprobs: wantLp ? { content: [chatLogprob(c, i)] } : null,
            finish_reason: c.finish,
            ...(c.finish ? { stop_reason: c.stopReason } : {}),
            ...(wantIds ? { token_ids: [c.tokens[i]] } : {}),
          },
        ],
      });
    }
    await pause();
  }
  if (conn.closed) return;
  if (r.stream_options?.include_usage)
    sse(res, { ...base, choices: [], usage: usageOf(prompt.length, choices) });
  sse(res, '[DONE]');
  res.end();
}

export async function completions(
  res: ServerResponse,
  req: IncomingMessage,
  model: Model,
  version: number,
  name: string,
  r: z.infer<typeof CompletionRequest>,
  prompts: number[][],
  params: SamplingParams,
): Promise<void> {
  const id = `cmpl-${nextId++}`;
  const created = Math.floor(Date.now() / 1000);
  const wantIds = r.return_token_ids === true;
  const wantLp = r.logprobs != null;
  const groups = prompts.map((p, k) => ({
    prompt: p,
    choices: startChoices(
      model,
      p,
      { ...params, maxTokens: Math.min(params.maxTokens, model.config.maxLen - p.length) },
      k * params.n,
    ),
  }));
  const all = groups.flatMap((g) => g.choices.map((c) => ({ c, prompt: g.prompt })));
  const promptTokens = prompts.reduce((s, p) => s + p.length, 0);
  if (!r.stream) {
    for (const { c } of all) while (!c.finish) advance(model, c, params);
    const head = { id, created, name, version };
    return sendJson(res, 200, completionBody(head, all, prompts, promptTokens, wantIds, wantLp), version);
  }
  const conn = startSse(req, res, version);
  const base = { id, object: 'text_completion', created, model: name, model_version: version };
  const first = new Set<number>();
  const offsets = new Map<number, number>();
  while (!conn.closed && all.some((x) => !x.c.finish)) {
    for (const { c, prompt } of all) {
      if (c.finish) continue;
      const i = c.tokens.length;
      advance(model, c, params);
      const delta = takeDelta(c, params);
      const isFirst = !first.has(c.index);
      first.add(c.index);
      const off = offsets.get(c.index) ?? 0;
      offsets.set(c.index, off + delta.length);
      sse(res, {
        ...base,
        choices: [
          {
            index: c.index,
            text: delta,
            logprobs: wantLp ? completionLogprobs(c, i, i + 1, off) : null,
            finish_reason: c.finish,
            ...(c.finish ? { stop_reason: c.stopReason } : {}),
            ...(wantIds
              ? { token_ids: [c.tokens[i]], ...(isFirst ? { prompt_token_ids: prompt } : {}) }
              : {}),
          },
        ],
        ...(wantIds && isFirst && c.index === 0 ? { prompt_token_ids: prompts[0] } : {}),
      });
    }
    await pause();
  }
  if (conn.closed) return;
  if (r.stream_options?.include_usage)
    sse(res, {
      ...base,
      choices: [],
      usage: usageOf(
        promptTokens,
        all.map((x) => x.c),
      ),
    });
  sse(res, '[DONE]');
  res.end();
}
