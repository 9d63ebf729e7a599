// Placeholder: the translation owner registers the Responses and Messages translators here.
import type { WireTranslator } from './types';

export const translators: Partial<Record<'responses' | 'messages', WireTranslator<any>>> = {};
