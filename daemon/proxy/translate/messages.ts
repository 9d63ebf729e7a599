// Anthropic Messages (`/v1/messages`) ⇄ Chat Completions (vLLM flavour). The request schema, request →
// chat, chat → Message and the stream each have their module (messages-*); here the errors,
// count_tokens and the translator.
import { messagesFromChat } from './messages-answer';
import { messagesLeftOut, messagesToChat } from './messages-request';
import { CountTokensRequest, MessagesRequest } from './messages-schema';
import { MessagesStream } from './messages-stream';
import type { ChatRequest, WireTranslator } from './types';

export { messagesToChat } from './messages-request';
export { CountTokensRequest } from './messages-schema';

const errorTypes: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  402: 'billing_error',
  403: 'permission_error',
  404: 'not_found_error',
  408: 'timeout_error',
  413: 'request_too_large',
  422: 'invalid_request_error',
  429: 'rate_limit_error',
  529: 'overloaded_error',
};

export function messagesErrorBody(status: number, message: string, field?: string | null) {
  const type = errorTypes[status] ?? (status >= 500 ? 'api_error' : 'invalid_request_error');
  return {
    type: 'error',
    error: { type, message: field && !message.includes(field) ? `${field}: ${message}` : message },
  };
}

/** `/v1/messages/count_tokens`: validates the body (throws ZodError), renders it as chat, counts with the backend's tokenizer. */
export async function countTokens(
  body: unknown,
  tokenize: (chatRequest: ChatRequest) => Promise<number>,
): Promise<{ input_tokens: number }> {
  const req = CountTokensRequest.parse(body);
  const chat = messagesToChat({ ...req, stream: false });
  return { input_tokens: await tokenize(chat) };
}

export const messagesTranslator: WireTranslator<MessagesRequest> = {
  wire: 'messages',
  parse: (body) => MessagesRequest.parse(body),
  isStream: (req) => req.stream === true,
  model: (req) => req.model,
  toChat: messagesToChat,
  leftOut: messagesLeftOut,
  fromChat: messagesFromChat,
  stream: (req) => new MessagesStream(req),
  errorBody: messagesErrorBody,
};
