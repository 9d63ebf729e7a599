// The LLM proxy: OpenAI (chat/completions, completions, responses, models), Anthropic (messages) and
// Gemini wire APIs under `/r/<rolloutId>/v1/...` (rollout-scoped) and `/v1/...` (the active recording
// session). Every call goes to an inference backend (or a recording's upstream) and is recorded. The
// routes are a table (./routes); this file wires them to the daemon's server and its life.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FastifyInstance } from 'fastify';
import { parseJsonBody } from '../api/body';
import type { DaemonContext } from '../context';
import { attemptOver, FINISHED_ROLLOUT } from '../protocol/entities';
import { BackendPool, type Backends } from './backends';
import { BridgeMemory, localTokenizers } from './bridge';
import { ProxyError } from './errors';
import { installFront, type ProxyRequest, proxyRequest, readBody } from './front';
import { CallPolicy } from './policy';
import { PromptIdsMemo } from './prompt-ids';
import { Recorder } from './recorder';
import { failRequest, type Handler, type ProxyDeps, router } from './routes';
import { Scopes } from './scope';
import { Upstreams } from './upstream';

export interface ProxyHandle {
  backends: Backends;
  /** The pool itself (health, outstanding requests, served models) for status views. */
  pool: BackendPool;
  /** What the per-rollout caches hold now (each within its byte budget). */
  held(): {
    bridge: { bytes: number; rollouts: number };
    scopes: { bytes: number; rollouts: number };
    affinities: number;
  };
  /** LLM-call records waiting for their store transaction. */
  recorderDepth(): number;
}

export interface ProxyOptions {
  /** The token bridge's memory budget (BRIDGE_BUDGET_BYTES by default). */
  bridgeBudgetBytes?: number;
}

export type { Backends } from './backends';

/** The native request schemas (OpenAI's checks; unknown keys pass through). */
export { ChatBody, CompletionBody } from './requests';

export async function registerProxy(
  app: FastifyInstance,
  ctx: DaemonContext,
  options: ProxyOptions = {},
): Promise<ProxyHandle> {
  const pool = new BackendPool(ctx.config.backend_timeout_ms);
  for (const url of ctx.config.backends) pool.add(url);
  const scopes = new Scopes(ctx);
  const memory = new BridgeMemory(options.bridgeBudgetBytes, localTokenizers(ctx.config, ctx.log));
  pool.onServed = (root, models) => memory.served(root, models);
  const promptIds = new PromptIdsMemo();
  // What the bridge and the pool keep for a rollout goes when its attempt is over (a recording's, when it stops).
  const forgetEnded = ctx.store.subscribe(
    (ev) => {
      if (ev.type === 'rollout' && attemptOver(ev.rollout)) {
        memory.forget(ev.rollout.id);
        promptIds.forget(ev.rollout.id);
        if (FINISHED_ROLLOUT.has(ev.rollout.status)) pool.forgetRollout(ev.rollout.id);
      } else if (ev.type === 'recording' && ev.recording.status === 'stopped') {
        memory.forget(ev.recording.rollout_id);
        promptIds.forget(ev.recording.rollout_id);
      }
    },
    ['rollout', 'recording'],
  );
  const recorder = new Recorder(ctx.store);
  const deps: ProxyDeps = {
    ctx,
    pool,
    scopes,
    upstreams: new Upstreams(ctx.dataDir),
    policy: new CallPolicy(ctx, memory),
    recorder,
    promptIds,
  };
  const routeOf = router(deps);

  let closing = false;
  const serve = async (req: ProxyRequest, msg: IncomingMessage, res: ServerResponse, handler: Handler) => {
    if (closing) throw new ProxyError(503, 'the daemon is shutting down', null, 'closing');
    if (req.method === 'POST') await parseBody(req, msg, res, ctx.config.body_limit_bytes);
    if (req.problem) throw req.problem;
    await handler(req, res);
  };
  installFront(app.server, (msg, res) => {
    const req = proxyRequest(msg);
    const handler = req && routeOf(req);
    if (!req || !handler) return false;
    serve(req, msg, res, handler).catch((err) => failRequest(deps, err, req, res));
    return true;
  });
  app.addHook('preClose', async () => {
    closing = true;
  });
  app.addHook('onClose', async () => {
    scopes.close();
    forgetEnded();
  });

  return {
    backends: pool,
    pool,
    held: () => ({ bridge: memory.held, scopes: scopes.held, affinities: pool.affinities }),
    recorderDepth: () => recorder.depth,
  };
}

/** Reads a POST body into `req` (its text and its JSON); a ProxyError 400 when it is no JSON. */
async function parseBody(req: ProxyRequest, msg: IncomingMessage, res: ServerResponse, limit: number) {
  req.raw = await readBody(msg, res, limit);
  const parsed = parseJsonBody(req.raw);
  if ('problem' in parsed) {
    const { code, message } = parsed.problem;
    throw new ProxyError(
      400,
      code === 'invalid_json'
        ? `invalid JSON body: ${message.replace(/^malformed JSON body: /, '')}`
        : message,
      null,
      code,
    );
  }
  req.body = parsed.value;
}
