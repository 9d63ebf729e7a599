// Prefix-break diagnosis: where the next call's prompt stopped extending the running sequence, what the
// tokens were on both sides from there on, and a guess why (shape: PrefixBreak in protocol/entities.ts).
import type { PrefixBreak } from '../protocol/entities';
import { firstDifference, type Ids, seqAt } from './merge';

/** Tokens kept per side in a PrefixBreak. */
export const BREAK_WINDOW = 16;
/** Tokens decoded per side to tell a retokenization from a real change. */
const TEXT_WINDOW = 64;

export interface DiagnoseOptions {
  /** Token ids → text (the model's tokenizer), for the texts and the text-based classes. */
  decode?: (ids: number[]) => string;
  /** Chat-template / special token ids (e.g. <|im_start|>, <|im_end|>, <think>). */
  templateTokenIds?: ReadonlySet<number>;
}

/** Chat-template markup of the common families (ChatML, Llama 3, Mistral, Gemma, Qwen3 think/tool tags). */
const MARKUP =
  /<\|[^|<>\s]{1,40}\|>|<\/?think>|<\/?tool_call>|<\/?tool_response>|<\/?s>|<\/?bos>|<eos>|\[\/?INST\]|<start_of_turn>|<end_of_turn>/g;

function slice(prompt: Ids, response: Ids | null, from: number, n: number): number[] {
  const len = prompt.length + (response ? response.length : 0);
  const out: number[] = [];
  for (let i = from; i < Math.min(len, from + n); i++)
    out.push(response ? seqAt(prompt, response, i) : prompt[i]);
  return out;
}

function safeDecode(decode: DiagnoseOptions['decode'], ids: number[]): string | null {
  if (!decode) return null;
  try {
    return decode(ids).replace(/\uFFFD+$/, ''); // a window may cut a multi-byte character
  } catch {
    return null;
  }
}

const prefixRelated = (a: string, b: string): boolean => a.startsWith(b) || b.startsWith(a);

function isMarkupOnly(text: string | null): boolean {
  if (!text || text.trim() === '') return false;
  return text.replace(MARKUP, '').trim() === '';
}

/** A think block starts the text (after whitespace). */
const THINK = /^\s*<think>/;

function stripMarkup(text: string): string {
  return text.replace(MARKUP, '').replace(/\s+/g, '');
}

/**
 * The class of a break:
 * - `template`: the first differing token (on either side) is a chat-template/special token — one of
 *   `templateTokenIds`, or a token whose text is only template markup — or the decoded texts differ only
 *   in template markup (and whitespace around it), or one side starts with a think block the other lacks
 *   (thinking the template dropped from the history);
 * - `retokenized`: the decoded texts agree, only the ids differ;
 * - `other`: anything else (edited history, dropped turns, a different system prompt …).
 */
export function classifyBreak(
  expected: number[],
  actual: number[],
  opts: DiagnoseOptions,
): PrefixBreak['class'] {
  const firsts = [expected[0], actual[0]].filter((t): t is number => t !== undefined);
  if (opts.templateTokenIds && firsts.some((t) => opts.templateTokenIds!.has(t))) return 'template';
  if (!opts.decode) return 'other';
  if (firsts.some((t) => isMarkupOnly(safeDecode(opts.decode, [t])))) return 'template';
  const e = safeDecode(opts.decode, expected);
  const a = safeDecode(opts.decode, actual);
  if (e === null || a === null) return 'other';
  if (e !== '' && a !== '' && prefixRelated(e, a)) return 'retokenized';
  // sampled thinking the template left out of the history (Qwen3 does for turns before the last query)
  if (THINK.test(e) !== THINK.test(a)) return 'template';
  const hasMarkup = e.replace(MARKUP, '') !== e || a.replace(MARKUP, '') !== a;
  if (hasMarkup && prefixRelated(stripMarkup(e), stripMarkup(a))) return 'template';
  return 'other';
}

/** Diagnose the break between the sequence S = P_k + R_k and the prompt of call `callIndex`. */
export function diagnosePrefixBreak(
  callIndex: number,
  prevPrompt: Ids,
  prevResponse: Ids,
  next: Ids,
  opts: DiagnoseOptions = {},
): PrefixBreak {
  const position = firstDifference(prevPrompt, prevResponse, next);
  const expected = slice(prevPrompt, prevResponse, position, BREAK_WINDOW);
  const actual = slice(next, null, position, BREAK_WINDOW);
  const cls = classifyBreak(
    slice(prevPrompt, prevResponse, position, TEXT_WINDOW),
    slice(next, null, position, TEXT_WINDOW),
    opts,
  );
  return {
    call_index: callIndex,
    position,
    expected,
    actual,
    expected_text: safeDecode(opts.decode, expected),
    actual_text: safeDecode(opts.decode, actual),
    class: cls,
  };
}
