// A whole chat answer's prompt ids read from the rollout's last answer where they continue it: an agent's
// next prompt begins with its last one, so the text of vLLM's `prompt_token_ids` list begins with the
// last list's text, and only the ids after it are parsed (`npm run bench -- answer-parse`, case
// `agent_next`, measures it against JSON.parse of the whole). The answer comes out as parsing the
// whole text gives it, key order included (prompt-ids.test.ts holds it to that).
import { BoundedMap } from '../bounded-map';
import type { Json } from './json';

const KEY = '"prompt_token_ids":';
const PROMPT_IDS = `${KEY}[`;

/**
 * Bytes the kept lists may hold together: a list's text at a byte a character (vLLM writes ASCII) and
 * its ids at 8 bytes an id. Past it the rollout kept longest ago goes first (its next answer is parsed
 * whole); a rollout's list goes when its attempt is over (`forget`).
 */
export const PROMPT_IDS_BUDGET_BYTES = 64 * 1024 * 1024;

/** Whether `s` from `from` on holds only digits and commas (a list of ids as vLLM writes it). */
function idsText(s: string, from: number): boolean {
  for (let i = from; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if ((c < 48 || c > 57) && c !== 44) return false;
  }
  return true;
}

export class PromptIdsMemo {
  private readonly last: BoundedMap<string, { text: string; ids: number[] }>;

  constructor(budgetBytes = PROMPT_IDS_BUDGET_BYTES) {
    this.last = new BoundedMap(budgetBytes);
  }

  /** The lists kept now, and what they weigh. */
  get held(): { bytes: number; rollouts: number } {
    return { bytes: this.last.bytes, rollouts: this.last.size };
  }

  forget(rolloutId: string): void {
    this.last.delete(rolloutId);
  }

  /**
   * `parse(text)`, with the answer's top-level prompt_token_ids read from `rolloutId`'s last list where
   * this one continues it (then kept as the last). A text without exactly one such list of plain ids,
   * or whose parse does not put it at the top level, is parsed whole.
   */
  parse(rolloutId: string, text: string, parse: (text: string) => Json | null): Json | null {
    // One such key in the whole text (inside a JSON string its quotes are escaped: never a match)
    const at = text.indexOf(KEY);
    if (at < 0 || !text.startsWith(PROMPT_IDS, at) || text.indexOf(KEY, at + 1) >= 0) return parse(text);
    const from = at + PROMPT_IDS.length;
    const end = text.indexOf(']', from);
    if (end < 0) return parse(text);
    const list = text.slice(from, end);
    const before = this.last.get(rolloutId);
    const continues =
      before !== undefined &&
      before.text !== '' && // after "[]" the next list has no comma to start from
      list.length >= before.text.length &&
      // String equality compares memory at once; startsWith walked these sliced strings a character
      // at a time, and cost more than the parse it saves
      list.slice(0, before.text.length) === before.text &&
      (list.length === before.text.length || list.charCodeAt(before.text.length) === 44);
    // the ids after the last list's (after its comma), or the whole list
    const head = continues ? Math.min(before.text.length + 1, list.length) : 0;
    if (!idsText(list, head)) return parse(text);
    let ids: number[];
    try {
      if (!continues) ids = JSON.parse(`[${list}]`);
      else if (list.length === before.text.length) ids = before.ids.slice();
      else if (head === list.length)
        return parse(text); // "…,": a trailing comma, malformed
      else ids = before.ids.concat(JSON.parse(`[${list.slice(head)}]`));
    } catch {
      return parse(text); // ",," and the like: malformed, as the whole parse will say
    }
    const json = parse(`${text.slice(0, from - 1)}null${text.slice(end + 1)}`);
    if (!json || json.prompt_token_ids !== null) return parse(text);
    json.prompt_token_ids = ids;
    this.keep(rolloutId, list, ids);
    return json;
  }

  /** Keeps `ids`, written as `list`, as the rollout's last prompt (what `parse` keeps; benches start from it). */
  keep(rolloutId: string, list: string, ids: number[]): void {
    this.last.set(rolloutId, { text: list, ids }, list.length + 8 * ids.length);
  }
}
