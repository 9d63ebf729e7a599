// count_tokens (Anthropic) and countTokens (Gemini): the upstream's own, or the backend's tokenizer over
// the translated chat. In a recording it is a side call, recorded; in a rollout it is no LLM call of
// the trajectory and is not recorded.
import type { ServerResponse } from 'node:http';
import { z } from 'zod';
import { readText, rootUrl, sendWhole } from '../../http';
import { type FixedTarget, servedBody } from '../dispatch';
import { invalidBody, ProxyError } from '../errors';
import { JSON_TYPE, type ProxyRequest } from '../front';
import type { Json } from '../json';
import { translatedOutput } from '../output';
import { passthrough } from '../passthrough';
import { geminiTarget } from '../route-table';
import type { Scope } from '../scope';
import { countTokens } from '../translate';
import { geminiCountTokens, geminiTranslator } from '../translate/gemini';
import type { ChatRequest } from '../translate/types';
import { ANTHROPIC_BASE } from '../upstream';
import { asProxyError, geminiKey, type Handler, newCall, type ProxyDeps, scopeOf } from './deps';

export const countTokensRoute =
  (d: ProxyDeps, wire: 'messages' | 'gemini'): Handler =>
  async (req: ProxyRequest, res: ServerResponse) => {
    const call = newCall(d, req, res, wire, performance.now());
    const early = wire === 'gemini' ? translatedOutput(geminiTranslator, null) : undefined;
    let model = '';
    try {
      if (wire === 'gemini') model = geminiTarget(req)?.model ?? '';
      if (wire === 'gemini') geminiKey(req);
      call.scope = await scopeOf(d, req);
    } catch (e) {
      return call.fail(asProxyError(e), {}, early);
    }
    const scope = call.scope;
    call.tags.push(...d.policy.sideTags(scope, req.body, true));
    // failRequest keeps the same rule for bodies that do not parse.
    if (scope.recording === null) call.unrecorded();
    const u = scope.upstream;
    try {
      if (u?.kind === 'anthropic' && wire === 'messages') {
        return passthrough(call, {
          url: `${rootUrl(u.base_url ?? ANTHROPIC_BASE)}/v1/messages/count_tokens`,
          headers: d.upstreams.anthropicHeaders(req),
          body: req.body as Json,
          stream: false,
          shape: 'json',
          backendName: u.base_url ?? 'anthropic',
          record: scope.recording !== null,
        });
      }
      const target = await d.upstreams.target(u);
      const tokenize = (chat: ChatRequest) => backendCount(d, scope, target, chat);
      const result =
        wire === 'gemini'
          ? await geminiCountTokens(model, req.body, tokenize)
          : await countTokens(req.body, tokenize);
      await call.answer(200, JSON_TYPE, JSON.stringify(result), {
        response: result,
        http_status: 200,
        total_ms: call.elapsed(),
      });
    } catch (e) {
      if (e instanceof z.ZodError) return call.fail(invalidBody(e), {}, early);
      return call.fail(asProxyError(e), {}, early);
    }
  };

/** How many tokens `chat` is, by the tokenizer of `target` or of the pool's backend for the scope. */
async function backendCount(
  d: ProxyDeps,
  scope: Scope,
  target: FixedTarget | null,
  chat: ChatRequest,
): Promise<number> {
  const b = target ? null : d.pool.pick(scope.rolloutId, undefined, scope.rollout.run_id);
  const root = target?.root ?? b?.root;
  if (!root) throw new ProxyError(503, 'no healthy inference backend to count tokens with');
  const res = await sendWhole(`${root}/tokenize`, {
    body: JSON.stringify(
      target
        ? servedBody({ model: chat.model, messages: chat.messages, tools: chat.tools }, target.served)
        : { model: chat.model, messages: chat.messages, tools: chat.tools },
    ),
    headers: target?.headers,
    timeoutMs: d.ctx.config.backend_timeout_ms,
    idempotent: true, // counting tokens changes nothing
  });
  const text = await readText(res);
  if (res.statusCode !== 200) throw new ProxyError(502, `tokenize failed: ${text.slice(0, 300)}`);
  const count = (JSON.parse(text) as { count?: unknown }).count;
  if (typeof count !== 'number') throw new ProxyError(502, 'tokenize returned no count');
  return count;
}
