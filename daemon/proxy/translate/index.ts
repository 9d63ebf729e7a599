// The wire translators the proxy serves besides Chat Completions.
import { messagesTranslator } from './messages';
import type { WireTranslator } from './types';

export const translators: Partial<Record<'responses' | 'messages', WireTranslator<any>>> = {
  messages: messagesTranslator,
};
export { countTokens } from './messages';
