// Anthropic's wire family: Messages (relayed to a recording's Anthropic upstream, else translated to
// chat for the backends) and its count_tokens.
import type { ServerResponse } from 'node:http';
import { rootUrl } from '../../http';
import { ProxyError } from '../errors';
import type { ProxyRequest } from '../front';
import type { Json } from '../json';
import { passthrough } from '../passthrough';
import { ANTHROPIC_BASE } from '../upstream';
import { countTokensRoute } from './count-tokens';
import { asProxyError, begin, type Handler, newCall, type ProxyDeps } from './deps';
import { runTranslated } from './translated';

export const messagesRoute =
  (d: ProxyDeps): Handler =>
  async (req: ProxyRequest, res: ServerResponse) => {
    const call = newCall(d, req, res, 'messages', performance.now());
    const body = req.body as Json;
    const scope = await begin(d, call, req, body);
    if (!scope) return;
    const u = scope.upstream;
    if (u?.kind === 'anthropic') {
      try {
        if (!body || typeof body !== 'object')
          throw new ProxyError(400, 'the request body must be a JSON object');
        return passthrough(call, {
          url: `${rootUrl(u.base_url ?? ANTHROPIC_BASE)}/v1/messages`,
          headers: d.upstreams.anthropicHeaders(req),
          body,
          stream: body.stream === true,
          shape: 'messages',
          backendName: u.base_url ?? 'anthropic',
          record: true,
        });
      } catch (e) {
        return call.fail(asProxyError(e));
      }
    }
    await runTranslated(d, call, 'messages', body, undefined);
  };

export const messagesCountTokensRoute = (d: ProxyDeps): Handler => countTokensRoute(d, 'messages');
