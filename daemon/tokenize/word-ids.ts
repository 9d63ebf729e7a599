// Text → ids as @huggingface/tokenizers' Tokenizer.encode(text, {add_special_tokens: false}) gives them,
// with the BPE of each pre-tokenized word kept in a memo: the library's own per-word cache is an LRU
// that reorders a Map on every hit and looks merges up by JSON.stringify of each pair, most of an
// encode's time. A word's ids depend on the word alone (BPE and the vocabulary are per word; with
// add_special_tokens false every post-processor hands the tokens back unchanged), so the result is the
// library's, id for id (word-ids.test.ts checks it on Qwen3 and Llama 3.1 with fast-check).
import type { Tokenizer } from '@huggingface/tokenizers';

/** Words kept per tokenizer; past it the memo starts over. ~50 bytes a word and its ids: ~2.5 MB. */
export const WORD_IDS_ENTRIES = 50_000;

/**
 * Set on a byte-level pre-tokenizer by the daemon's faster one (local.ts) where its words are `raw`'s
 * words of the text, each mapped alone by `map` (text → UTF-8 bytes → vocabulary characters): the memo
 * is then keyed by the word before its mapping, one lookup a word instead of two.
 */
export const BYTE_LEVEL_WORDS = Symbol('byteLevelWords');
export interface ByteLevelWords {
  raw(text: string): string[];
  map(word: string): string;
}

/** The parts of the library's Tokenizer this reads (its encode_text, tokenize_helper and encode). */
interface Inner {
  splitter_unnormalized: { trie: Trie };
  splitter_normalized: { trie: Trie };
  added_tokens_map: Map<string, { id: number; lstrip: boolean; rstrip: boolean }>;
  normalizer: ((text: string) => string) | null;
  pre_tokenizer: ((text: string, o: { section_index: number }) => string[]) | null;
  model: {
    (words: string[]): string[];
    tokens_to_ids: Map<string, number>;
    unk_token_id: number | undefined;
    fuse_unk: boolean;
  };
  remove_space?: boolean;
  do_lowercase_and_remove_accent?: boolean;
}

type Trie = { [char: string]: Trie } & { end?: string };

/**
 * The library's DictionarySplitter.split over its own trie (the longest added token at the first place
 * one starts), stepping over the characters no added token starts with without walking the trie.
 */
function trieSplitter(trie: Trie): (text: string) => string[] {
  const starts = new Uint8Array(65536);
  for (const k in trie) if (k.length === 1) starts[k.charCodeAt(0)] = 1;
  return (text: string): string[] => {
    const result: string[] = [];
    const n = text.length;
    let start = 0;
    let i = 0;
    while (i < n) {
      if (!starts[text.charCodeAt(i)]) {
        i++;
        continue;
      }
      let node: Trie | undefined = trie;
      let match: string | null = null;
      for (let j = i; j < n; j++) {
        node = node[text[j]];
        if (!node) break;
        if (node.end) match = node.end;
      }
      if (match) {
        if (i > start) result.push(text.slice(start, i));
        result.push(match);
        i += match.length;
        start = i;
      } else i++;
    }
    if (start < n) result.push(text.slice(start));
    return result;
  };
}

/** Sections split at added tokens, an lstrip/rstrip token trimming its neighbours (encode_text). */
function splitAtAdded(split: string[], added: Inner['added_tokens_map']): string[] {
  for (let i = 0; i < split.length; i++) {
    const a = added.get(split[i]);
    if (!a) continue;
    if (a.lstrip && i > 0) split[i - 1] = split[i - 1].trimEnd();
    if (a.rstrip && i < split.length - 1) split[i + 1] = split[i + 1].trimStart();
  }
  return split;
}

/**
 * An encoder for `tok`, or null where the tokenizer does what the memo cannot follow (fuse_unk joins
 * unknown tokens across words; remove_space and lowercasing are old-style options): then the library.
 */
export function wordIdsEncoder(tok: Tokenizer): ((text: string) => number[]) | null {
  const t = tok as unknown as Inner;
  if (t.model.fuse_unk || t.remove_space === true || t.do_lowercase_and_remove_accent) return null;
  const added = t.added_tokens_map;
  const vocab = t.model.tokens_to_ids;
  const unk = t.model.unk_token_id;
  const memo = new Map<string, number[]>();
  const unnormalized = trieSplitter(t.splitter_unnormalized.trie);
  const normalized = trieSplitter(t.splitter_normalized.trie);
  const idOf = (token: string): number => added.get(token)?.id ?? vocab.get(token) ?? (unk as number);
  const byteLevel = (t.pre_tokenizer as { [BYTE_LEVEL_WORDS]?: ByteLevelWords } | null)?.[BYTE_LEVEL_WORDS];
  /** The ids of a pre-tokenizer's word: keyed by its raw text where the mapping is known (byteLevel). */
  const wordIds = (word: string): number[] => {
    let ids = memo.get(word);
    if (ids !== undefined) return ids;
    ids = t.model([byteLevel ? byteLevel.map(word) : word]).map(idOf);
    if (memo.size >= WORD_IDS_ENTRIES) memo.clear();
    memo.set(word, ids);
    return ids;
  };
  const words = (sub: string, s: number): string[] =>
    byteLevel
      ? byteLevel.raw(sub)
      : t.pre_tokenizer !== null
        ? t.pre_tokenizer(sub, { section_index: s })
        : [sub];
  return (text: string): number[] => {
    const out: number[] = [];
    const sections = splitAtAdded(unnormalized(text), added);
    for (let s = 0; s < sections.length; s++) {
      let section = sections[s];
      if (section.length === 0) continue;
      const a = added.get(section);
      if (a) {
        out.push(a.id);
        continue;
      }
      if (t.normalizer !== null) section = t.normalizer(section);
      if (section.length === 0) continue;
      for (const sub of splitAtAdded(normalized(section), added)) {
        if (sub.length === 0) continue;
        const b = added.get(sub);
        if (b) {
          out.push(b.id);
          continue;
        }
        for (const w of words(sub, s)) for (const id of wordIds(w)) out.push(id);
      }
    }
    return out;
  };
}
