// Test kit for the translators: a scripted vLLM-style chat backend (responses and the chunk stream vLLM
// would send for them, vLLM extras included) and a minimal fastify route that serves one wire API through
// a translator. Used by the unit tests and by test/e2e/wire-*.test.ts; the daemon does not import it.
import Fastify, { type FastifyInstance } from 'fastify';
import { ZodError, z } from 'zod';
import type { ChatChunk, ChatRequest, ChatResponse, WireTranslator } from './types';

export interface ScriptedTurn {
  reasoning?: string;
  content?: string;
  toolCalls?: { id: string; name: string; arguments: string }[];
  finish?: 'stop' | 'length' | 'tool_calls';
  /** vLLM's `stop_reason`: the matched stop string. */
  stopReason?: string | null;
  promptTokens?: number;
  completionTokens?: number;
  /** Streaming only: the backend fails after half of the chunks with this message. */
  failMidStream?: string;
}

const CHAT_ID = 'chatcmpl-test0001';

export function chatResponseFor(turn: ScriptedTurn, model = 'test-model'): ChatResponse {
  const message: Record<string, unknown> = { role: 'assistant', content: turn.content ?? null };
  if (turn.reasoning !== undefined) message.reasoning_content = turn.reasoning;
  if (turn.toolCalls?.length)
    message.tool_calls = turn.toolCalls.map((t) => ({
      id: t.id,
      type: 'function',
      function: { name: t.name, arguments: t.arguments },
    }));
  const p = turn.promptTokens ?? 11;
  const c = turn.completionTokens ?? 7;
  return {
    id: CHAT_ID,
    object: 'chat.completion',
    created: 1700000000,
    model,
    choices: [
      {
        index: 0,
        message,
        logprobs: { content: [{ token: 'x', logprob: -0.5, bytes: [120], top_logprobs: [] }] },
        finish_reason: turn.finish ?? (turn.toolCalls?.length ? 'tool_calls' : 'stop'),
        stop_reason: turn.stopReason ?? null,
        token_ids: [1, 2, 3],
      },
    ],
    usage: { prompt_tokens: p, completion_tokens: c, total_tokens: p + c },
    prompt_token_ids: Array.from({ length: p }, (_, i) => i + 100),
  } as unknown as ChatResponse;
}

/** Split text into fragments of up to `n` characters (what a streaming backend sends). */
function pieces(s: string, n = 3): string[] {
  const out: string[] = [];
  for (let i = 0; i < s.length; i += n) out.push(s.slice(i, i + n));
  return out;
}

export function chatChunksFor(turn: ScriptedTurn, model = 'test-model', pieceSize = 3): ChatChunk[] {
  const p = turn.promptTokens ?? 11;
  const c = turn.completionTokens ?? 7;
  const mk = (delta: Record<string, unknown>, extra: Record<string, unknown> = {}): ChatChunk =>
    ({
      id: CHAT_ID,
      object: 'chat.completion.chunk',
      created: 1700000000,
      model,
      choices: [{ index: 0, delta, logprobs: null, finish_reason: null, token_ids: [5], ...extra }],
    }) as unknown as ChatChunk;
  const chunks: ChatChunk[] = [];
  const first = mk({ role: 'assistant', content: '' });
  (first as Record<string, unknown>).prompt_token_ids = Array.from({ length: p }, (_, i) => i + 100);
  chunks.push(first);
  for (const r of pieces(turn.reasoning ?? '', pieceSize)) chunks.push(mk({ reasoning_content: r }));
  for (const t of pieces(turn.content ?? '', pieceSize)) chunks.push(mk({ content: t }));
  (turn.toolCalls ?? []).forEach((tc, index) => {
    chunks.push(
      mk({
        tool_calls: [{ index, id: tc.id, type: 'function', function: { name: tc.name, arguments: '' } }],
      }),
    );
    for (const a of pieces(tc.arguments, pieceSize + 2))
      chunks.push(mk({ tool_calls: [{ index, function: { arguments: a } }] }));
  });
  chunks.push(
    mk(
      {},
      {
        finish_reason: turn.finish ?? (turn.toolCalls?.length ? 'tool_calls' : 'stop'),
        stop_reason: turn.stopReason ?? null,
      },
    ),
  );
  chunks.push({
    id: CHAT_ID,
    object: 'chat.completion.chunk',
    created: 1700000000,
    model,
    choices: [],
    usage: { prompt_tokens: p, completion_tokens: c, total_tokens: p + c },
  } as unknown as ChatChunk);
  return chunks;
}

/** Parse an SSE body into `{event, data}` records (data JSON-parsed). */
export function parseSse(text: string): { event: string | null; data: any }[] {
  return text
    .split('\n\n')
    .filter((f) => f.trim())
    .map((f) => {
      let event: string | null = null;
      let data = '';
      for (const line of f.split('\n')) {
        if (line.startsWith('event: ')) event = line.slice(7);
        else if (line.startsWith('data: ')) data += line.slice(6);
      }
      return { event, data: data === '[DONE]' ? data : JSON.parse(data) };
    });
}

export interface ScriptedServer {
  app: FastifyInstance;
  url: string;
  /** The chat requests the backend received, in order. */
  chatRequests: ChatRequest[];
  /** Turns the backend answers with, consumed in order. */
  script: ScriptedTurn[];
  close(): Promise<void>;
}

/**
 * A real HTTP server that serves `path` through `translator` over a scripted chat backend, the same
 * way the proxy core does (parse → toChat → backend → fromChat | stream frames).
 */
export async function serveTranslator(
  translator: WireTranslator<any>,
  path: string,
  extra?: (app: FastifyInstance, s: ScriptedServer) => void,
): Promise<ScriptedServer> {
  const app = Fastify();
  const s: ScriptedServer = {
    app,
    url: '',
    chatRequests: [],
    script: [],
    close: () => app.close(),
  };
  app.post(path, async (request, reply) => {
    let req: unknown;
    try {
      req = translator.parse(request.body);
    } catch (e) {
      if (e instanceof ZodError) {
        const field = e.issues[0]?.path.join('.') ?? null;
        return reply.code(400).send(translator.errorBody(400, z.prettifyError(e), field));
      }
      throw e;
    }
    const chat = translator.toChat(req);
    s.chatRequests.push(chat);
    const turn = s.script.shift();
    if (!turn) return reply.code(500).send(translator.errorBody(500, 'script exhausted'));
    if (!translator.isStream(req)) return translator.fromChat(chatResponseFor(turn, chat.model), req);
    reply.hijack();
    reply.raw.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    const ws = translator.stream(req);
    const chunks = chatChunksFor(turn, chat.model);
    const upTo = turn.failMidStream ? Math.floor(chunks.length / 2) : chunks.length;
    for (const c of chunks.slice(0, upTo)) for (const f of ws.chunk(c)) reply.raw.write(f);
    for (const f of turn.failMidStream ? ws.error(turn.failMidStream) : ws.end()) reply.raw.write(f);
    reply.raw.end();
  });
  extra?.(app, s);
  await app.listen({ host: '127.0.0.1', port: 0 });
  const addr = app.server.address();
  s.url = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
  return s;
}
