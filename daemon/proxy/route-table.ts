// The proxy's wire routes as one list: each is served under `/…` (the active recording) and under
// `/r/<rollout id>/…` (one rollout). index.ts serves exactly these; tests walk them (fuzz-routes).
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
