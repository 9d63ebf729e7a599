// The reference engine's HTTP server: the vLLM OpenAI-compatible subset the proxy relies on.
// Every response carries the weight version it was sampled with (header x-model-version, field model_version);
// a request is served entirely by one version (training swaps in a new Model object).
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { z } from 'zod';
import { advance, type ChoiceState, type SamplingParams, startChoices, takeDelta } from './generate';
import type { Model } from './model';
import {
  ChatRequest,
  CollectiveRpc,
  CompletionRequest,
  DetokenizeRequest,
  HttpError,
  parse,
  TokenizeChat,
  TokenizePrompt,
  toChatMessages,
  UpdateConfigArgs,
} from './requests';
import { applyChatTemplate, decode, encode, tokenBytes, tokenString } from './tokenizer';

export interface ServedModel {
  readonly name: string;
  current(): { model: Model; version: number };
  /** Serve the checkpoint in folder `dir` from now on (vLLM's full-weight reload); returns its version. */
  load?(dir: string): Promise<number>;
}

let nextId = 1;

/** The folder `update_config` named, per served model, for the next `reload_weights`. */
const pendingModelDir = new WeakMap<ServedModel, string>();
/** Served models between /pause and /resume: generation answers 503 (vllm/exceptions.py:139). */
const paused = new WeakSet<ServedModel>();

/**
 * vLLM 0.34's dev-mode RPC (VLLM_SERVER_DEV_MODE=1) as the daemon uses it to reload full weights:
 * reload_weights(weights_path=DIR) between /pause and /resume. As vLLM's, a reload while generation is
 * not paused fails (vllm/v1/worker/extensible_kv_cache.py:786, from gpu_worker.py:645). Older callers'
 * update_config({model_config: {model: DIR}}) still names the folder.
 */
async function collectiveRpc(
  served: ServedModel,
  res: ServerResponse,
  rpc: z.infer<typeof CollectiveRpc>,
): Promise<void> {
  if (!served.load) throw new HttpError(400, 'this server cannot reload weights');
  if (rpc.method === 'update_config') {
    const args = parse(UpdateConfigArgs, rpc.args[0] ?? rpc.kwargs.overrides);
    pendingModelDir.set(served, args.model_config.model);
    return sendJson(res, 200, { results: [null] });
  }
  if (rpc.method === 'reload_weights') {
    if (!paused.has(served))
      throw new HttpError(
        500,
        'RuntimeError: updating weights needs free device memory beside the KV cache: pause generation with the cache cleared first (POST /pause)',
      );
    const path = rpc.kwargs.weights_path;
    if (typeof path === 'string' && path) pendingModelDir.set(served, path);
    const dir = pendingModelDir.get(served);
    if (!dir) throw new HttpError(400, 'reload_weights needs kwargs.weights_path', 'kwargs.weights_path');
    const version = await served.load(dir);
    return sendJson(res, 200, { results: [null] }, version);
  }
  throw new HttpError(400, `unsupported collective_rpc method ${rpc.method}`, 'method');
}

export interface EngineServer {
  server: Server;
  port: number;
  close(): Promise<void>;
}

export async function startServer(served: ServedModel, port = 0): Promise<EngineServer> {
  const server = createServer((req, res) => {
    handle(served, req, res).catch((e: unknown) => {
      const err = e instanceof HttpError ? e : new HttpError(500, (e as Error)?.message ?? String(e));
      if (res.headersSent) {
        res.end();
        return;
      }
      sendJson(res, err.status, {
        error: {
          message: err.message,
          type: err.status < 500 ? 'BadRequestError' : 'InternalServerError',
          param: err.param,
          code: err.status,
        },
      });
    });
  });
  server.keepAliveTimeout = 30_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve());
  });
  const actual = (server.address() as AddressInfo).port;
  return {
    server,
    port: actual,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function sendJson(res: ServerResponse, status: number, body: unknown, version?: number): void {
  const text = JSON.stringify(body);
  const headers: Record<string, string | number> = {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
  };
  if (version !== undefined) headers['x-model-version'] = version;
  res.writeHead(status, headers);
  res.end(text);
}

async function readBody(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const c of req) {
    size += (c as Buffer).length;
    if (size > 16 * 1024 * 1024) throw new HttpError(413, 'request body too large');
    chunks.push(c as Buffer);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  if (text.trim() === '') throw new HttpError(400, 'request body must be JSON');
  try {
    return JSON.parse(text);
  } catch {
    throw new HttpError(400, 'request body is not valid JSON');
  }
}

async function handle(served: ServedModel, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const path = (req.url ?? '/').split('?')[0].replace(/\/+$/, '') || '/';
  const route = path.startsWith('/v1/') ? path.slice(3) : path;
  const { model, version } = served.current();
  const maxLen = model.config.maxLen;
  if (req.method === 'GET') {
    if (route === '/health') return sendJson(res, 200, { status: 'ok', model_version: version }, version);
    if (route === '/models')
      return sendJson(
        res,
        200,
        {
          object: 'list',
          data: [
            {
              id: served.name,
              object: 'model',
              created: 0,
              owned_by: 'harness-rl',
              root: served.name,
              max_model_len: maxLen,
              model_version: version,
            },
          ],
        },
        version,
      );
    throw new HttpError(404, `no route GET ${path}`);
  }
  if (req.method !== 'POST') throw new HttpError(405, `method ${req.method} not allowed`);
  const body = await readBody(req);
  if (route === '/tokenize') {
    let tokens: number[];
    if (body !== null && typeof body === 'object' && 'messages' in body) {
      const r = parse(TokenizeChat, body);
      tokens = applyChatTemplate(toChatMessages(r.messages), r.add_generation_prompt);
    } else tokens = encode(parse(TokenizePrompt, body).prompt);
    return sendJson(
      res,
      200,
      { count: tokens.length, max_model_len: maxLen, tokens, token_strs: null },
      version,
    );
  }
  if (path === '/collective_rpc') return collectiveRpc(served, res, parse(CollectiveRpc, body));
  // {"success": bool}, false while blocks are held (vllm/entrypoints/serve/dev/cache/api_router.py:44).
  if (path === '/reset_prefix_cache') return sendJson(res, 200, { success: true }, version);
  if (path === '/pause') {
    paused.add(served);
    return sendJson(res, 200, { status: 'paused' }, version);
  }
  if (path === '/resume') {
    paused.delete(served);
    return sendJson(res, 200, { status: 'resumed' }, version);
  }
  if ((route === '/chat/completions' || route === '/completions') && paused.has(served))
    throw new HttpError(503, 'Generation is paused; please retry');
  if (route === '/detokenize') {
    const r = parse(DetokenizeRequest, body);
    return sendJson(res, 200, { prompt: decode(r.tokens) }, version);
  }
  if (route === '/chat/completions') {
    const r = parse(ChatRequest, body);
    checkModel(served, r.model);
    const prompt = applyChatTemplate(toChatMessages(r.messages), r.add_generation_prompt);
    const params = samplingParams(
      r,
      r.max_completion_tokens ?? r.max_tokens ?? null,
      prompt.length,
      maxLen,
      r.logprobs ? (r.top_logprobs ?? 0) : 0,
    );
    return chat(res, req, model, version, served.name, r, prompt, params);
  }
  if (route === '/completions') {
    const r = parse(CompletionRequest, body);
    checkModel(served, r.model);
    const prompts: number[][] =
      typeof r.prompt === 'string'
        ? [encode(r.prompt)]
        : typeof r.prompt[0] === 'number'
          ? [r.prompt as number[]]
          : (r.prompt as (string | number[])[]).map((p) => (typeof p === 'string' ? encode(p) : p));
    const longest = Math.max(...prompts.map((p) => p.length));
    const params = samplingParams(r, r.max_tokens ?? 16, longest, maxLen, r.logprobs ?? 0);
    return completions(res, req, model, version, served.name, r, prompts, params);
  }
  throw new HttpError(404, `no route POST ${path}`);
}

function checkModel(served: ServedModel, name: string | undefined): void {
  if (name !== undefined && name !== served.name)
    throw new HttpError(
      404,
      `The model \`${name}\` does not exist. This server serves \`${served.name}\`.`,
      'model',
    );
}

function samplingParams(
  r: {
    n: number;
    temperature?: number | null;
    top_p?: number | null;
    top_k?: number | null;
    min_p?: number | null;
    seed?: number | null;
    stop?: string | string[] | null;
  },
  maxTokens: number | null,
  promptLen: number,
  maxLen: number,
  topLogprobs: number,
): SamplingParams {
  if (promptLen === 0) throw new HttpError(400, 'prompt is empty', 'prompt');
  if (promptLen >= maxLen)
    throw new HttpError(
      400,
      `This model's maximum context length is ${maxLen} tokens. However, your request has ${promptLen} input tokens.`,
      'messages',
    );
  const room = maxLen - promptLen;
  return {
    n: r.n,
    maxTokens: Math.min(maxTokens ?? room, room),
    temperature: r.temperature ?? 1,
    topP: r.top_p ?? 1,
    topK: Math.max(0, r.top_k ?? 0),
    minP: r.min_p ?? 0,
    seed: r.seed ?? null,
    stop: r.stop == null ? [] : typeof r.stop === 'string' ? [r.stop] : r.stop,
    topLogprobs,
  };
}

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

const pause = () => new Promise<void>((r) => setImmediate(r));

function sse(res: ServerResponse, data: unknown): void {
  res.write(`data: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`);
}

/** Start an event stream; the returned state turns `closed` when the client goes away. */
function startSse(req: IncomingMessage, res: ServerResponse, version: number): { closed: boolean } {
  res.writeHead(200, {
    'content-type': 'text/event-stream',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
    'x-model-version': String(version),
  });
  const state = { closed: false };
  res.on('close', () => {
    state.closed = true;
  });
  req.on('aborted', () => {
    state.closed = true;
  });
  return state;
}

async function chat(
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
    const completion = choices.reduce((s, c) => s + c.tokens.length, 0);
    return sendJson(
      res,
      200,
      {
        id,
        object: 'chat.completion',
        created,
        model: name,
        model_version: version,
        choices: choices.map((c) => ({
          index: c.index,
          message: { role: 'assistant', content: c.text, tool_calls: [] },
          logprobs: wantLp ? { content: c.tokens.map((_, i) => chatLogprob(c, i)) } : null,
          finish_reason: c.finish,
          stop_reason: c.stopReason,
          ...(wantIds ? { token_ids: c.tokens } : {}),
        })),
        usage: {
          prompt_tokens: prompt.length,
          completion_tokens: completion,
          total_tokens: prompt.length + completion,
        },
        ...(wantIds ? { prompt_token_ids: prompt } : {}),
      },
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
  if (r.stream_options?.include_usage) {
    const completion = choices.reduce((s, c) => s + c.tokens.length, 0);
    sse(res, {
      ...base,
      choices: [],
      usage: {
        prompt_tokens: prompt.length,
        completion_tokens: completion,
        total_tokens: prompt.length + completion,
      },
    });
  }
  sse(res, '[DONE]');
  res.end();
}

async function completions(
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
    const completion = all.reduce((s, x) => s + x.c.tokens.length, 0);
    return sendJson(
      res,
      200,
      {
        id,
        object: 'text_completion',
        created,
        model: name,
        model_version: version,
        choices: all.map(({ c, prompt }) => ({
          index: c.index,
          text: c.text,
          logprobs: wantLp ? completionLogprobs(c, 0, c.tokens.length, 0) : null,
          finish_reason: c.finish,
          stop_reason: c.stopReason,
          ...(wantIds ? { prompt_token_ids: prompt, token_ids: c.tokens } : {}),
        })),
        usage: {
          prompt_tokens: promptTokens,
          completion_tokens: completion,
          total_tokens: promptTokens + completion,
        },
        ...(wantIds ? { prompt_token_ids: prompts[0] } : {}),
      },
      version,
    );
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
  if (r.stream_options?.include_usage) {
    const completion = all.reduce((s, x) => s + x.c.tokens.length, 0);
    sse(res, {
      ...base,
      choices: [],
      usage: {
        prompt_tokens: promptTokens,
        completion_tokens: completion,
        total_tokens: promptTokens + completion,
      },
    });
  }
  sse(res, '[DONE]');
  res.end();
}
