// OpenAI's wire family: Chat Completions and Completions (native: the backends speak them) and
// Responses (translated to chat, or relayed to a recording's OpenAI upstream).
import type { ServerResponse } from 'node:http';
import { backendBody, type FixedTarget } from '../dispatch';
import { invalidBody, ProxyError } from '../errors';
import { harnessText } from '../fast-paths';
import type { ProxyRequest } from '../front';
import type { Json } from '../json';
import { nativeOutput } from '../output';
import { passthrough } from '../passthrough';
import { runCall } from '../pipeline';
import { ChatBody, CompletionBody, surelyChatBody } from '../requests';
import { sampledBody } from '../sampling';
import { asProxyError, begin, type Handler, newCall, type ProxyDeps } from './deps';
import { runTranslated } from './translated';

/** Chat Completions and Completions, native. */
export const nativeRoute =
  (d: ProxyDeps, kind: 'chat' | 'completions'): Handler =>
  async (req: ProxyRequest, res: ServerResponse) => {
    const call = newCall(d, req, res, kind, performance.now());
    const body = req.body as Json;
    const scope = await begin(d, call, req, body);
    if (!scope) return;
    if (kind !== 'chat' || !surelyChatBody(body)) {
      const parsed = (kind === 'chat' ? ChatBody : CompletionBody).safeParse(body);
      if (!parsed.success) return call.fail(invalidBody(parsed.error));
    }
    let target: FixedTarget | null;
    let sent: ReturnType<typeof sampledBody>;
    try {
      target = await d.upstreams.target(scope.upstream);
      sent = sampledBody(scope, backendBody(body, kind, target?.extras ?? true));
    } catch (e) {
      return call.fail(asProxyError(e));
    }
    await runCall(call, d.pool, {
      kind,
      body: sent.body,
      bodyText: harnessText(req.raw, body, sent.body),
      sampling: sent.plan,
      stream: body.stream === true,
      output: nativeOutput(body),
      target,
      tito: kind === 'chat' ? d.policy.titoOf(scope, call.tags) : undefined,
      promptIds: d.promptIds,
    });
  };

/** Responses: relayed to a recording's OpenAI upstream, else translated to chat for the backends. */
export const responsesRoute =
  (d: ProxyDeps): Handler =>
  async (req: ProxyRequest, res: ServerResponse) => {
    const call = newCall(d, req, res, 'responses', performance.now());
    const body = req.body as Json;
    const scope = await begin(d, call, req, body);
    if (!scope) return;
    const u = scope.upstream;
    try {
      if (u?.kind === 'openai') {
        if (!body || typeof body !== 'object')
          throw new ProxyError(400, 'the request body must be a JSON object');
        const target = await d.upstreams.target(u);
        return passthrough(call, {
          url: `${target?.root}/v1/responses`,
          headers: target?.headers ?? {},
          body,
          stream: body.stream === true,
          shape: 'responses',
          backendName: target?.name ?? 'openai',
          record: true,
        });
      }
      if (u?.kind === 'anthropic')
        throw new ProxyError(
          400,
          'this recording forwards to Anthropic: use the Anthropic Messages API (…/v1/messages)',
        );
    } catch (e) {
      return call.fail(asProxyError(e));
    }
    await runTranslated(d, call, 'responses', body, undefined);
  };
