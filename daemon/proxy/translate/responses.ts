// OpenAI Responses (`/v1/responses`) ⇄ Chat Completions (vLLM flavour). Stateless: the harness sends
// the whole conversation in `input` (`store: false` style); `previous_response_id` is refused. The
// request schema, request → chat, chat → Response and the stream each have their module (responses-*).
import { responsesFromChat } from './responses-answer';
import { responsesToChat, toolPlan } from './responses-request';
import { ResponsesRequest } from './responses-schema';
import { ResponsesStream } from './responses-stream';
import type { WireTranslator } from './types';

export { responsesToChat } from './responses-request';
export { ResponsesRequest } from './responses-schema';

export function responsesErrorBody(status: number, message: string, field?: string | null) {
  const type =
    status === 401
      ? 'authentication_error'
      : status === 429
        ? 'rate_limit_error'
        : status >= 500
          ? 'server_error'
          : 'invalid_request_error';
  return { error: { message, type, param: field ?? null, code: null } };
}

export const responsesTranslator: WireTranslator<ResponsesRequest> = {
  wire: 'responses',
  parse: (body) => ResponsesRequest.parse(body),
  isStream: (req) => req.stream === true,
  model: (req) => req.model,
  toChat: responsesToChat,
  leftOut: (req) => toolPlan(req).leftOut,
  fromChat: responsesFromChat,
  stream: (req) => new ResponsesStream(req),
  errorBody: responsesErrorBody,
};
