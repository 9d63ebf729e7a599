// Chat messages and tools that the chat-template tests of the daemon's tokenizers share: a tool with
// non-ASCII text, and a history whose earlier answer carries its thinking inline and whose later one
// carries it as reasoning_content.
import type { ChatMessageLike, ChatToolLike } from '../proxy/tito/tokenizer';

export const readFileTools: ChatToolLike[] = [
  {
    type: 'function',
    function: {
      name: 'read_file',
      description: 'Lire un fichier — UTF-8',
      parameters: { type: 'object', properties: { path: { type: 'string' }, n: { type: 'integer' } } },
    },
  },
];

/** Two finished turns, rendered without a generation prompt. */
export const thinkingHistory: ChatMessageLike[] = [
  { role: 'user', content: 'q1' },
  { role: 'assistant', content: '<think>\nold thoughts\n</think>\n\nanswer 1' },
  { role: 'user', content: 'q2' },
  { role: 'assistant', content: 'answer 2', reasoning_content: 'r2' },
];

/** One user turn, rendered with enable_thinking false. */
export const noThinkingTurn: ChatMessageLike[] = [{ role: 'user', content: 'no thinking please' }];
