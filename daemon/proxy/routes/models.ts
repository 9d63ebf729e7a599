// GET /v1/models: a recording's provider upstream answers for itself; otherwise the names its vLLM
// upstream or the pool serves, listed in OpenAI's shape (or Anthropic's, for an Anthropic client).
import type { ServerResponse } from 'node:http';
import { readText, rootUrl, sendWhole } from '../../http';
import { anthropicErrorBody, openaiErrorBody } from '../errors';
import { type ProxyRequest, sendJson } from '../front';
import type { Scope } from '../scope';
import { keyOf } from '../scope';
import { ANTHROPIC_BASE, OPENAI_BASE } from '../upstream';
import { asProxyError, type Handler, type ProxyDeps, scopeOf } from './deps';

export const modelsRoute =
  (d: ProxyDeps): Handler =>
  async (req: ProxyRequest, res: ServerResponse) => {
    const anthropic = req.headers['anthropic-version'] !== undefined;
    try {
      let upstream: Scope['upstream'] = null;
      const key = keyOf(req.headers);
      if (req.rid !== undefined || !d.scopes.isDaemonToken(key) || (await d.scopes.activeRecording()))
        upstream = (await scopeOf(d, req)).upstream;
      if (upstream && upstream.kind !== 'vllm') {
        const headers =
          upstream.kind === 'anthropic'
            ? d.upstreams.anthropicHeaders(req)
            : ((await d.upstreams.target(upstream))?.headers ?? {});
        const base = upstream.base_url ?? (upstream.kind === 'anthropic' ? ANTHROPIC_BASE : OPENAI_BASE);
        const answer = await sendWhole(`${rootUrl(base)}/v1/models`, {
          method: 'GET',
          headers,
          timeoutMs: 30_000,
        });
        return sendJson(res, answer.statusCode ?? 502, await readText(answer));
      }
      let names: string[];
      if (upstream?.kind === 'vllm' && upstream.base_url) {
        const answer = await sendWhole(`${rootUrl(upstream.base_url)}/v1/models`, {
          method: 'GET',
          timeoutMs: 30_000,
        });
        const json = JSON.parse(await readText(answer)) as { data?: { id: string }[] };
        names = (json.data ?? []).map((m) => m.id);
      } else names = await d.pool.models();
      return sendJson(res, 200, JSON.stringify(anthropic ? anthropicList(names) : openaiList(names)));
    } catch (e) {
      const err = asProxyError(e);
      const body = anthropic
        ? anthropicErrorBody(err.status, err.message)
        : openaiErrorBody(err.status, err.message, null, err.code);
      return sendJson(res, err.status, JSON.stringify(body));
    }
  };

function anthropicList(names: string[]) {
  return {
    data: names.map((id) => ({ type: 'model', id, display_name: id, created_at: '1970-01-01T00:00:00Z' })),
    has_more: false,
    first_id: names[0] ?? null,
    last_id: names.at(-1) ?? null,
  };
}

function openaiList(names: string[]) {
  return {
    object: 'list',
    data: names.map((id) => ({ id, object: 'model', created: 0, owned_by: 'harness-rl' })),
  };
}
