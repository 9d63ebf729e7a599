// The reference engine's HTTP server: the vLLM OpenAI-compatible subset the proxy relies on.
// Every response carries the weight version it was sampled with (header x-model-version, field model_version);
// a request is served entirely by one version (training swaps in a new Model object).
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { z } from 'zod';
import { chat, completions } from './completions';
import type { SamplingParams } from './generate';
import { readBody, sendJson } from './http';
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
import { applyChatTemplate, decode, encode } from './tokenizer';

export interface ServedModel {
  readonly name: string;
  current(): { model: Model; version: number };
  /** Serve the checkpoint in folder `dir` from now on (vLLM's full-weight reload); returns its version. */
  load?(dir: string): Promise<number>;
}

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

async function handle(served: ServedModel, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const path = (req.url ?? '/').split('?')[0].replace(/\/+$/, '') || '/';
  const route = path.startsWith('/v1/') ? path.slice(3) : path;
  const { model, version } = served.current();
  const maxLen = model.config.maxLen;
  if (req.method === 'GET') return answerGet(served, res, path, route, maxLen, version);
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

/** GET /health and /v1/models (vLLM's list: the one served model, with its context length). */
function answerGet(
  served: ServedModel,
  res: ServerResponse,
  path: string,
  route: string,
  maxLen: number,
  version: number,
) {
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
