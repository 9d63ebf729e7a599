// The proxy's wire routes as one list: each is served under `/…` (the active recording) and under
// `/r/<rollout id>/…` (one rollout). routes/index.ts serves exactly these; tests walk them (fuzz-routes).
// Also what a path says by itself: its Gemini model and method, its wire API.
import { hasNul, NO_NUL_MESSAGE } from '../protocol/bounds';
import type { WireApi } from '../protocol/entities';
import { ProxyError } from './errors';
import { decodeSegment, type ProxyRequest } from './front';
export const PROXY_ROUTES = [
  { method: 'POST', path: '/v1/chat/completions' },
  { method: 'POST', path: '/v1/completions' },
  { method: 'POST', path: '/v1/responses' },
  { method: 'POST', path: '/v1/messages' },
  { method: 'POST', path: '/v1/messages/count_tokens' },
  { method: 'GET', path: '/v1/models' },
  { method: 'POST', path: '/v1beta/models/{model}:generateContent' },
  { method: 'POST', path: '/v1beta/models/{model}:streamGenerateContent' },
  { method: 'POST', path: '/v1beta/models/{model}:countTokens' },
] as const;

export type ProxyRoutePath = (typeof PROXY_ROUTES)[number]['path'];

/** `/v1beta/models/<model>:<method>`: the model (still percent-encoded) and the method. */
export const GEMINI_PATH = /^\/v1beta\/models\/([^/:]+):(generateContent|streamGenerateContent|countTokens)$/;

/**
 * `…/v1beta/models/<model>:generateContent` or `:streamGenerateContent`: the model and whether to
 * stream; a ProxyError 400 naming `model` when the model's escapes are malformed or it holds a NUL.
 */
export function geminiTarget(
  req: ProxyRequest,
): { model: string; method: 'generateContent' | 'streamGenerateContent' | 'countTokens' } | null {
  const m = GEMINI_PATH.exec(req.path);
  if (!m) return null;
  const model = decodeSegment(m[1], 'model');
  if (hasNul(model)) throw new ProxyError(400, `model: ${NO_NUL_MESSAGE}`, 'model', 'invalid_url');
  return { model, method: m[2] as 'generateContent' };
}

export function isCountTokens(path: string): boolean {
  return path === '/v1/messages/count_tokens' || GEMINI_PATH.exec(path)?.[2] === 'countTokens';
}

export function wireApiOfUrl(url: string): WireApi {
  if (url.includes('/v1beta/models/')) return 'gemini';
  if (url.includes('/v1/messages')) return 'messages';
  if (url.includes('/v1/responses')) return 'responses';
  if (url.includes('/v1/completions') && !url.includes('/chat/')) return 'completions';
  return 'chat';
}
