// Google's Gemini wire family: generateContent and streamGenerateContent (translated to chat for vLLM
// backends) and countTokens. Errors answer in Google's shape from the start.
import type { ServerResponse } from 'node:http';
import { ProxyError } from '../errors';
import type { ProxyRequest } from '../front';
import type { Json } from '../json';
import { translatedOutput } from '../output';
import { geminiTarget } from '../route-table';
import { geminiTranslator } from '../translate/gemini';
import { countTokensRoute } from './count-tokens';
import { asProxyError, begin, geminiKey, type Handler, newCall, type ProxyDeps } from './deps';
import { runTranslated } from './translated';

export const generateRoute =
  (d: ProxyDeps): Handler =>
  async (req: ProxyRequest, res: ServerResponse) => {
    const call = newCall(d, req, res, 'gemini', performance.now());
    const early = translatedOutput(geminiTranslator, null);
    let found: ReturnType<typeof geminiTarget>;
    try {
      found = geminiTarget(req);
    } catch (e) {
      return call.fail(asProxyError(e), {}, early);
    }
    if (!found || found.method === 'countTokens')
      return call.fail(new ProxyError(404, `no Gemini method ${req.path}`, null, 'unknown_route'), {}, early);
    const target = { model: found.model, stream: found.method === 'streamGenerateContent' };
    call.stream = target.stream;
    geminiKey(req);
    let body = req.body as Json;
    body = body && typeof body === 'object' && !Array.isArray(body) ? { ...body, ...target } : body;
    const scope = await begin(d, call, req, body, early);
    if (!scope) return;
    const u = scope.upstream;
    if (u && u.kind !== 'vllm')
      return call.fail(
        new ProxyError(
          400,
          `this recording forwards to ${u.kind}: the Gemini API is translated for vLLM backends only`,
        ),
        {},
        early,
      );
    await runTranslated(d, call, 'gemini', body, early);
  };

export const geminiCountTokensRoute = (d: ProxyDeps): Handler => countTokensRoute(d, 'gemini');
