// The daemon's own chat tokenizer: a served model's tokenizer.json (@huggingface/tokenizers) and Jinja
// chat template (@huggingface/jinja, which like transformers trims blocks and strips their left space),
// rendered the way vLLM 0.34's /tokenize and chat completions render (renderers/hf.py
// safe_apply_chat_template → transformers' apply_chat_template: render to text, then encode with
// add_special_tokens=False).
import { Template } from '@huggingface/jinja';
import {
  ByteLevelPreTokenizer,
  SequencePreTokenizer,
  SplitPreTokenizer,
  Tokenizer,
} from '@huggingface/tokenizers';
import type { ChatMessageLike, ChatTokenizer, ChatToolLike } from '../proxy/tito/tokenizer';
import { templateConversation } from './conversation';
import { chatTemplateOf, type ModelFiles } from './files';
import { fromMessageTemplate, renderFrom } from './skip';
import { BYTE_LEVEL_WORDS, type ByteLevelWords, wordIdsEncoder } from './word-ids';

/** A special token of the config as text (a string, or an AddedToken object's content). */
function tokenText(v: unknown): string | null {
  if (typeof v === 'string') return v;
  if (v && typeof v === 'object' && typeof (v as { content?: unknown }).content === 'string')
    return (v as { content: string }).content;
  return null;
}

/** GPT-2's byte → character map, which byte-level vocabularies are written in (ASCII bytes only). */
const ASCII_CHARS: string[] = Array.from({ length: 128 }, (_, b) =>
  b >= 33 && b <= 126 ? String.fromCharCode(b) : String.fromCharCode(b < 33 ? 256 + b : 256 + 33 + (b - 127)),
);

/** Words mapped to byte-level text kept per tokenizer; past it the memo starts over. */
const WORD_MEMO_ENTRIES = 50_000;

/**
 * Gives a byte-level pre-tokenizer a memo of its per-word mapping (text → UTF-8 bytes → vocabulary
 * characters), which was half of the library's encode time: the same output, ASCII words mapped
 * through a table, each distinct word once. A memo of WORD_MEMO_ENTRIES words (~100 bytes each).
 * `fast` (the proxy's fast paths on) also gives a Split and a Sequence their faster walks (below).
 * Returns its words as Words knows them (null: not known, or not `fast`).
 */
function speedUpPreTokenizer(pre: unknown, fast: boolean): Words | null {
  if (pre instanceof SequencePreTokenizer) {
    const seq = pre as unknown as {
      tokenizers: unknown[];
      pre_tokenize_text(text: string): string[];
      pre_tokenize(text: string | string[]): string[];
    };
    const steps = seq.tokenizers.map((p) => speedUpPreTokenizer(p, fast));
    if (!fast) return null;
    // each step's words come out flat already: the library's Array.flat after them only copies
    seq.pre_tokenize = (text: string | string[]): string[] =>
      Array.isArray(text) ? text.flatMap((t) => seq.pre_tokenize_text(t)) : seq.pre_tokenize_text(text);
    return sequenceWords(steps);
  }
  if (pre instanceof SplitPreTokenizer) return fast ? isolatedSplit(pre) : null;
  if (!(pre instanceof ByteLevelPreTokenizer)) return null;
  const level = pre as unknown as {
    add_prefix_space: boolean;
    use_regex: boolean;
    pattern: RegExp;
    byte_encoder: Record<number, string>;
    pre_tokenize_text(text: string): string[];
    pre_tokenize(text: string | string[]): string[];
  };
  const encoder = new TextEncoder();
  const memo = new Map<string, string>();
  const mapped = (word: string): string => {
    let out = memo.get(word);
    if (out !== undefined) return out;
    out = '';
    let ascii = true;
    for (let i = 0; i < word.length && ascii; i++) {
      const c = word.charCodeAt(i);
      if (c < 128) out += ASCII_CHARS[c];
      else ascii = false;
    }
    if (!ascii) out = Array.from(encoder.encode(word), (b) => level.byte_encoder[b]).join('');
    if (memo.size >= WORD_MEMO_ENTRIES) memo.clear();
    memo.set(word, out);
    return out;
  };
  const raw = (text: string): string[] => {
    const t = level.add_prefix_space && !text.startsWith(' ') ? ` ${text}` : text;
    return level.use_regex ? (t.match(level.pattern) ?? []) : [t];
  };
  level.pre_tokenize_text = (text: string): string[] => raw(text).map(mapped);
  // After a Split (Qwen, Llama 3): one word in, one out, without the library's map-then-flat
  level.pre_tokenize = (text: string | string[]): string[] => {
    if (!Array.isArray(text)) return level.pre_tokenize_text(text);
    if (!level.use_regex && !level.add_prefix_space) return text.map(mapped);
    const out: string[] = [];
    for (const t of text) for (const w of level.pre_tokenize_text(t)) out.push(w);
    return out;
  };
  if (!fast) return null;
  return level.use_regex || level.add_prefix_space ? { raw, map: mapped } : { map: mapped };
}

/**
 * A pre-tokenizer's words where the daemon set its walks: `raw`, the words of a text before any
 * byte-level mapping (absent: the text is one word), and `map`, that mapping of one word (absent:
 * none). What word-ids.ts keys its memo by (BYTE_LEVEL_WORDS).
 */
interface Words {
  raw?: (text: string) => string[];
  map?: (word: string) => string;
}

/**
 * A Sequence's words from its steps' (each step splits every word of the last; Qwen's and Llama 3's:
 * a Split, then a byte-level mapping of each word): known where every step's are, at most one step
 * splits, and only the last maps.
 */
function sequenceWords(steps: (Words | null)[]): Words | null {
  if (steps.some((w) => w === null)) return null;
  const known = steps as Words[];
  const splits = known.filter((w) => w.raw);
  if (splits.length > 1 || known.slice(0, -1).some((w) => w.map)) return null;
  return { raw: splits[0]?.raw, map: known[known.length - 1]?.map };
}

/**
 * Gives a Split that keeps its matches as words (behavior Isolated, not inverted: Qwen's and Llama 3's
 * regex) a split without the library's matchAll iterator and Array.flat, a third of an encode's time:
 * the same words, the text between matches kept, empty matches skipped as matchAll steps over them.
 */
function isolatedSplit(pre: unknown): Words | null {
  const split = pre as unknown as {
    config: { invert?: boolean; behavior?: string };
    pattern: RegExp | null;
    pre_tokenize_text(text: string): string[];
    pre_tokenize(text: string | string[]): string[];
  };
  const re = split.pattern;
  if (re === null || split.config.invert || split.config.behavior?.toLowerCase() !== 'isolated') return null;
  if (!re.global) return null;
  const words = (text: string, out: string[]): void => {
    let prev = 0;
    re.lastIndex = 0;
    for (let m = re.exec(text); m !== null; m = re.exec(text)) {
      const whole = m[0];
      if (prev < m.index) out.push(text.slice(prev, m.index));
      if (whole.length > 0) out.push(whole);
      else {
        // an empty match: step one code point, as String.prototype.matchAll does with the u flag
        const lead = text.charCodeAt(re.lastIndex);
        const trail = text.charCodeAt(re.lastIndex + 1);
        const pair = lead >= 0xd800 && lead <= 0xdbff && trail >= 0xdc00 && trail <= 0xdfff;
        re.lastIndex += re.unicode && pair ? 2 : 1;
      }
      prev = m.index + whole.length;
    }
    if (prev < text.length) out.push(text.slice(prev));
  };
  split.pre_tokenize_text = (text: string): string[] => {
    const out: string[] = [];
    words(text, out);
    return out;
  };
  split.pre_tokenize = (text: string | string[]): string[] => {
    const out: string[] = [];
    if (Array.isArray(text)) for (const t of text) words(t, out);
    else words(text, out);
    return out;
  };
  return { raw: split.pre_tokenize_text };
}

const SPECIAL_KEYS = [
  'bos_token',
  'eos_token',
  'unk_token',
  'sep_token',
  'pad_token',
  'cls_token',
  'mask_token',
];

export class LocalChatTokenizer implements ChatTokenizer {
  private readonly tok: Tokenizer;
  private readonly templates = new Map<string, Template>();
  /** Per template source: it compiled to render from a message on (./skip), or null where it cannot. */
  private readonly fromTemplates = new Map<string, Template | null>();
  /** The proxy's fast paths on (HARNESS_RL_FAST_PATHS): renderings from a message on are allowed. */
  private readonly fast: boolean;
  /** What transformers passes every template: the special tokens map (bos_token, eos_token, …). */
  private readonly specials: Record<string, unknown> = {};
  /** Added special tokens with neither lstrip nor rstrip: where encode splits before any BPE. */
  private readonly splitters: string[] = [];
  /** The library's encode with a memo of each word's ids (word-ids.ts); null: the library's own. */
  private readonly fastEncode: ((text: string) => number[]) | null;

  /** `shared`: another instance over the same tokenizer.json, whose loaded tokenizer this one reuses. */
  constructor(
    private readonly modelFiles: ModelFiles,
    shared?: LocalChatTokenizer,
  ) {
    this.tok = shared ? shared.tok : new Tokenizer(modelFiles.tokenizer, modelFiles.config);
    // HARNESS_RL_FAST_PATHS=off (the proxy's switch, fast-paths.ts): the library's encode and split
    const fast = process.env.HARNESS_RL_FAST_PATHS !== 'off';
    this.fast = fast;
    if (!shared) {
      const words = speedUpPreTokenizer(this.tok.pre_tokenizer, fast);
      if (words?.map) {
        const w: ByteLevelWords = { raw: words.raw ?? ((text) => [text]), map: words.map };
        (this.tok.pre_tokenizer as unknown as { [BYTE_LEVEL_WORDS]?: ByteLevelWords })[BYTE_LEVEL_WORDS] = w;
      }
    }
    this.fastEncode = shared ? shared.fastEncode : fast ? wordIdsEncoder(this.tok) : null;
    const files = modelFiles;
    for (const k of SPECIAL_KEYS) {
      const t = tokenText(files.config[k]);
      if (t !== null) this.specials[k] = t;
    }
    const extra = files.config.additional_special_tokens;
    if (Array.isArray(extra)) this.specials.additional_special_tokens = extra.map(tokenText);
    const added = (files.tokenizer.added_tokens ?? []) as Record<string, unknown>[];
    for (const a of added)
      if (a.special && !a.lstrip && !a.rstrip && typeof a.content === 'string')
        this.splitters.push(a.content);
    this.splitters.sort((a, b) => b.length - a.length);
  }

  /** The files it was made from. */
  files(): ModelFiles {
    return this.modelFiles;
  }

  /** The same tokenizer with another chat template (tests render variants). */
  withTemplate(chatTemplate: string): LocalChatTokenizer {
    return new LocalChatTokenizer({ ...this.modelFiles, chatTemplate }, this);
  }

  private template(withTools: boolean): { source: string; compiled: Template } {
    const source = chatTemplateOf(this.modelFiles, withTools);
    if (source === null) throw new Error('the model has no chat template');
    let compiled = this.templates.get(source);
    if (!compiled) {
      compiled = new Template(source);
      this.templates.set(source, compiled);
    }
    return { source, compiled };
  }

  /** The chat template's text for `messages` (what /tokenize encodes). Throws what the template raises. */
  renderText(
    messages: ChatMessageLike[],
    tools: ChatToolLike[] | undefined,
    addGenerationPrompt: boolean,
    templateKwargs?: Record<string, unknown>,
  ): string {
    const { source, compiled } = this.template(Boolean(tools?.length));
    return compiled.render(
      this.items(templateConversation(messages, source), tools, addGenerationPrompt, templateKwargs),
    );
  }

  /** What a template is rendered with (transformers' apply_chat_template's variables). */
  private items(
    conversation: ChatMessageLike[],
    tools: ChatToolLike[] | undefined,
    addGenerationPrompt: boolean,
    templateKwargs?: Record<string, unknown>,
  ): Record<string, unknown> {
    return {
      ...this.specials,
      ...templateKwargs,
      messages: conversation,
      tools: tools ?? null,
      documents: null,
      add_generation_prompt: addGenerationPrompt,
    };
  }

  /**
   * renderText's text from message `from`'s part on, rendering only the messages from there (./skip),
   * or null when the template cannot be proven to give the same text that way (or the fast paths are
   * off): then only renderText is exact.
   */
  renderTextFrom(
    messages: ChatMessageLike[],
    tools: ChatToolLike[] | undefined,
    addGenerationPrompt: boolean,
    templateKwargs: Record<string, unknown> | undefined,
    from: number,
  ): string | null {
    if (!this.fast) return null;
    const { source } = this.template(Boolean(tools?.length));
    let compiled = this.fromTemplates.get(source);
    if (compiled === undefined) {
      compiled = fromMessageTemplate(source);
      this.fromTemplates.set(source, compiled);
    }
    if (!compiled) return null;
    const conversation = templateConversation(messages, source);
    // system messages merged: the template's message indices are not the request's
    if (conversation.length !== messages.length) return null;
    return renderFrom(compiled, this.items(conversation, tools, addGenerationPrompt, templateKwargs), from);
  }

  /** Text → ids, special-token text mapped to its id, nothing added (add_special_tokens=False). */
  encode(text: string): number[] {
    if (text === '') return [];
    return this.fastEncode ? this.fastEncode(text) : this.libraryEncode(text);
  }

  /** The library's encode, no memo of ours (what the fast one is checked against). */
  libraryEncode(text: string): number[] {
    return text === '' ? [] : this.tok.encode(text, { add_special_tokens: false }).ids;
  }

  decode(ids: number[]): string {
    return this.tok.decode(ids, { skip_special_tokens: false });
  }

  async render(
    messages: ChatMessageLike[],
    tools: ChatToolLike[] | undefined,
    addGenerationPrompt: boolean,
    templateKwargs?: Record<string, unknown>,
  ): Promise<number[]> {
    return this.encode(this.renderText(messages, tools, addGenerationPrompt, templateKwargs));
  }

  /**
   * The special token `text` starts with and its id, when encode splits there before any BPE (an added
   * special token without lstrip/rstrip): then encode(a + text) = encode(a) + encode(text). Else null.
   */
  splitterAt(text: string): { text: string; id: number } | null {
    for (const s of this.splitters)
      if (text.startsWith(s)) {
        const id = this.tok.token_to_id(s);
        return id === undefined ? null : { text: s, id };
      }
    return null;
  }
}
