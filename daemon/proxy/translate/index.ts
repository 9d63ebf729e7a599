// The wire translators the proxy serves besides Chat Completions.
import { geminiTranslator } from './gemini';
import { messagesTranslator } from './messages';
import { responsesTranslator } from './responses';
import type { WireTranslator } from './types';

export const translators: Partial<Record<'responses' | 'messages' | 'gemini', WireTranslator<any>>> = {
  gemini: geminiTranslator,
  messages: messagesTranslator,
  responses: responsesTranslator,
};
export { countTokens } from './messages';
