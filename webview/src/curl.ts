// "Copy as curl / JSON" for one llm call. Pure.
import type { LlmCall } from '../../daemon/protocol/entities';

const PATHS: Record<LlmCall['wire_api'], string> = {
  chat: '/chat/completions',
  completions: '/completions',
  responses: '/responses',
  messages: '/messages',
  // Gemini names the model in the path (…/v1beta/models/<model>:generateContent)
  gemini: '/models/{model}:generateContent',
};

function shellQuote(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

/** A curl command that replays the call's request against an OpenAI-style base URL (…/v1). */
export function callAsCurl(call: Pick<LlmCall, 'wire_api' | 'request'>, baseUrl: string): string {
  const url = baseUrl.replace(/\/+$/, '') + PATHS[call.wire_api];
  const auth =
    call.wire_api === 'messages'
      ? `-H "x-api-key: $ANTHROPIC_API_KEY" -H 'anthropic-version: 2023-06-01'`
      : `-H "Authorization: Bearer $OPENAI_API_KEY"`;
  return `curl ${shellQuote(url)} \\\n  -H 'content-type: application/json' ${auth} \\\n  -d ${shellQuote(JSON.stringify(call.request))}`;
}

/** The whole recorded call as pretty JSON. */
export function callAsJson(call: LlmCall): string {
  return JSON.stringify(call, null, 2);
}
