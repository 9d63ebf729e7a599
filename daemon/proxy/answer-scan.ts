// Backend answers parsed without making what the proxy will not use into objects:
// - parseChatAnswer: a whole (non-streamed) chat answer from vLLM, for when the harness will not see
//   its logprob entries. Each choice's `logprobs.content` array is read by one sticky regex (entries
//   as vLLM writes them, the shape chunk-scan.ts reads: token, logprob, bytes, empty top_logprobs,
//   no whitespace) and replaced by its number in the text that JSON.parse then reads. The entries
//   come back as `{logprob}`, as the stream assembler keeps them without entries. Any other entry
//   shape (top logprobs, whitespace, another key order) or a content array anywhere but in a
//   choice's logprobs makes it parse the whole text. In a long answer the entries are most of the
//   bytes. An answer of fewer tokens (by its usage, which vLLM writes after the choices) is parsed
//   whole unless its entries are most of its text: beside 12k echoed prompt ids the scan, and the
//   copy of the text it makes, cost more than they save; once prompt-ids.ts has cut them, a small
//   call's 17 entries scan in ~6 us against ~10 parsed.
// - parseWithoutPromptIds: a bridged call's answer or chunk, without the prompt ids vLLM echoes.
// Both are fast paths (fast-paths.ts switches them off); `npm run bench -- answer-parse` measures
// them against JSON.parse of the whole text (figures: README, Benchmarks).

import { NUM, STR } from './chunk-scan';
import type { Json } from './json';
import { parseBackendJson } from './json';

const CONTENT = '"logprobs":{"content":[';
const ENTRY = new RegExp(
  String.raw`\{"token":${STR},"logprob":(${NUM}),"bytes":\[(?:${NUM}(?:,${NUM})*)?\],"top_logprobs":\[\]\}`,
  'y',
);
const CLOSE = 93; // ]
const COMMA = 44;
/** Fewer answer tokens than this: the whole text is parsed, unless its entries fill most of it. */
const SCAN_FROM_TOKENS = 128;
/** Fewer than this: parsed whole, entries or not (at 4 tokens neither way is faster). */
const SCAN_SHORT_FROM_TOKENS = 8;
/** An entry's share of the text, in characters an entry: 48 at the least, so `tokens × 96` is half of it or more. */
const SHORT_CHARS_PER_TOKEN = 96;
const COMPLETION_TOKENS = '"completion_tokens":';

/**
 * The answer as parseBackendJson reads it, except that each choice's logprob entries are only
 * `{logprob}`; null when the text is not JSON (or nests too deep), as parseBackendJson.
 */
export function parseChatAnswer(text: string, scanFrom = SCAN_FROM_TOKENS): Json | null {
  // An entry takes 48 characters at the least: a shorter text holds fewer than the least scanned.
  if (text.length < Math.min(scanFrom, SCAN_SHORT_FROM_TOKENS) * 48) return parseBackendJson(text);
  let at = text.indexOf(CONTENT);
  if (at < 0) return parseBackendJson(text);
  const usage = text.indexOf(COMPLETION_TOKENS, at);
  if (usage >= 0) {
    const tokens = Number.parseInt(text.slice(usage + COMPLETION_TOKENS.length, usage + 40), 10);
    const mostlyEntries = tokens >= SCAN_SHORT_FROM_TOKENS && tokens * SHORT_CHARS_PER_TOKEN >= text.length;
    if (tokens < scanFrom && !mostlyEntries) return parseBackendJson(text);
  }
  // Inside a JSON string every quote is escaped: CONTENT, which ends in `":{"content":[`, only ever
  // matches a key.
  const lists: number[][] = [];
  let cut = '';
  let from = 0;
  while (at >= 0) {
    let pos = at + CONTENT.length;
    const logprobs: number[] = [];
    if (text.charCodeAt(pos) !== CLOSE)
      for (;;) {
        ENTRY.lastIndex = pos;
        const m = ENTRY.exec(text);
        if (!m) return parseBackendJson(text);
        logprobs.push(Number(m[1]));
        pos = ENTRY.lastIndex;
        const next = text.charCodeAt(pos);
        if (next === CLOSE) break;
        if (next !== COMMA) return parseBackendJson(text);
        pos++;
      }
    cut += `${text.slice(from, at + CONTENT.length)}${lists.length}`;
    lists.push(logprobs);
    from = pos;
    at = text.indexOf(CONTENT, pos);
  }
  const json = parseBackendJson(cut + text.slice(from));
  if (!json || !Array.isArray(json.choices)) return parseBackendJson(text);
  let placed = 0;
  for (const c of json.choices as Json[]) {
    const content = c?.logprobs?.content;
    if (!Array.isArray(content) || typeof content[0] !== 'number') continue;
    c.logprobs.content = lists[content[0]].map((logprob) => ({ logprob }));
    placed++;
  }
  // A list outside a choice's logprobs (no backend writes one) stands there as its number: start over.
  return placed === lists.length ? json : parseBackendJson(text);
}

const PROMPT_IDS = '"prompt_token_ids":[';

/**
 * A bridged call's answer (the proxy sent the prompt as token ids and knows them), as
 * parseBackendJson reads it but with each `prompt_token_ids` list null, never parsed: vLLM echoes
 * the prompt (12k ids for an agent's call: bench `proxy.answer_parse`, `bridged`), and the bridge
 * drops them anyway.
 * A list is cut at its first `]` unread: a malformed one passes where JSON.parse would refuse it
 * (its ids are not used); one that holds a `]` leaves text JSON.parse refuses, and the whole text
 * is parsed.
 */
export function parseWithoutPromptIds(text: string): Json | null {
  let at = text.indexOf(PROMPT_IDS);
  if (at < 0) return parseBackendJson(text);
  let cut = '';
  let from = 0;
  while (at >= 0) {
    const list = at + PROMPT_IDS.length;
    const end = text.indexOf(']', list);
    if (end < 0) return parseBackendJson(text);
    cut += `${text.slice(from, list - 1)}null`;
    from = end + 1;
    at = text.indexOf(PROMPT_IDS, from);
  }
  return parseBackendJson(cut + text.slice(from)) ?? parseBackendJson(text);
}
