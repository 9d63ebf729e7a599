// A served model's own tokenizer files (tokenizer.json, tokenizer_config.json, chat_template.jinja), read
// from a local model folder: what the daemon needs to render chat templates and tokenize as vLLM does.
import { existsSync, readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { errorText } from '../error-text';

export interface ModelFiles {
  /** tokenizer.json, parsed. */
  tokenizer: Record<string, unknown>;
  /** tokenizer_config.json, parsed (special tokens, chat_template). */
  config: Record<string, unknown>;
  /** chat_template.jinja when the folder has one (transformers 5 prefers it to the config's). */
  chatTemplate: string | null;
}

/** Reads a model folder's tokenizer files; throws naming the file that is missing or not JSON. */
export function readModelFolder(dir: string): ModelFiles {
  const json = (name: string): Record<string, unknown> => {
    const path = join(dir, name);
    if (!existsSync(path)) throw new Error(`${path}: not found (the model folder needs ${name})`);
    try {
      return JSON.parse(readFileSync(path, 'utf8'));
    } catch (e) {
      throw new Error(`${path}: not JSON (${errorText(e)})`);
    }
  };
  const jinja = join(dir, 'chat_template.jinja');
  return {
    tokenizer: json('tokenizer.json'),
    config: json('tokenizer_config.json'),
    chatTemplate: existsSync(jinja) ? readFileSync(jinja, 'utf8') : null,
  };
}

/** Waits for the event loop's next turn (what is queued runs between the pieces of a load). */
export const nextTurn = (): Promise<void> => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * readModelFolder without holding the event loop for its whole ~0.5 s (Qwen3's 11 MB tokenizer.json):
 * the files read without blocking, the event loop's queue served before each JSON.parse.
 */
export async function readModelFolderAsync(dir: string): Promise<ModelFiles> {
  const text = async (name: string): Promise<string | null> => {
    try {
      return await readFile(join(dir, name), 'utf8');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw e;
    }
  };
  const json = async (name: string): Promise<Record<string, unknown>> => {
    const path = join(dir, name);
    const t = await text(name);
    if (t === null) throw new Error(`${path}: not found (the model folder needs ${name})`);
    await nextTurn();
    try {
      return JSON.parse(t);
    } catch (e) {
      throw new Error(`${path}: not JSON (${errorText(e)})`);
    }
  };
  const tokenizer = await json('tokenizer.json');
  const config = await json('tokenizer_config.json');
  return { tokenizer, config, chatTemplate: await text('chat_template.jinja') };
}

/**
 * The chat template transformers picks (tokenization_utils_base.get_chat_template, which vLLM's
 * renderers/hf.py resolve_chat_template calls): chat_template.jinja, else the config's; of a named
 * list, "tool_use" when tools are given and it exists, else "default". Null: the model has none.
 */
export function chatTemplateOf(files: ModelFiles, withTools: boolean): string | null {
  if (files.chatTemplate !== null) return files.chatTemplate;
  const t = files.config.chat_template;
  if (typeof t === 'string') return t;
  if (!Array.isArray(t)) return null;
  const named = new Map<string, string>();
  for (const x of t)
    if (x && typeof x === 'object' && typeof x.name === 'string' && typeof x.template === 'string')
      named.set(x.name, x.template);
  return (withTools ? named.get('tool_use') : undefined) ?? named.get('default') ?? null;
}
