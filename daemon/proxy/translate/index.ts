// The wire translators the proxy serves besides Chat Completions.
import { messagesTranslator } from './messages';
import { responsesTranslator } from './responses';
import type { WireTranslator } from './types';

export const translators: Partial<Record<'responses' | 'messages', WireTranslator<any>>> = {
  messages: messagesTranslator,
  responses: responsesTranslator,
};
export { countTokens } from './messages';
