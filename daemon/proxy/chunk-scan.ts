import type { Json } from './json';
// A streamed vLLM chat chunk read straight from its text when it has the shape nearly every chunk of
// a stream has: one choice with one delta text, its logprobs and its token ids, exactly as vLLM
// writes it (pydantic: no whitespace, fields in declaration order). The record's fields are read out
// and the spans the harness may not see (logprobs, token ids) located, with no JSON.parse, no object
// per chunk and no second pass to strip. Any other text (another shape or key order, whitespace,
// usage, a tool call, malformed JSON) is refused and goes through JSON.parse; what is accepted is
// read exactly as JSON.parse would read it (chunk-scan.test.ts checks that against JSON.parse).
//
// The accepted text is HEAD CHOICE `]}`, HEAD being the chunk's first fields as JSON.stringify
// writes them for the stream's id, created and model (learned from a chunk JSON.parse read):
//   {"id":S,"object":"chat.completion.chunk","created":N,"model":S,"choices":[
// CHOICE:
//   {"index":D,"delta":{K:S},"logprobs":(null|{"content":[E,…]}),"finish_reason":(null|S)
//    [,"stop_reason":null],"token_ids":[N,…]}
// K one of "content", "reasoning_content", "reasoning"; E {"token":S,"logprob":N,"bytes":[N,…],
// "top_logprobs":[]}; S a JSON string, N a JSON number, D digits.

/** One logprob entry as vLLM writes it (top_logprobs always empty here). */
export interface LogprobEntry {
  token: string;
  logprob: number;
  bytes: number[];
  top_logprobs: never[];
}

/** A JSON string, quotes included (a code unit below 0x20 only escaped, the escapes JSON has). */
export const STR = String.raw`"(?:[^"\\\x00-\x1f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*"`;
/** A JSON number. */
export const NUM = String.raw`-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?`;
const NUMS = `((?:${NUM}(?:,${NUM})*)?)`;
/** `(…)` with the groups the scanner reads, `(?:…)` for the ones it does not. */
const group = (read: boolean, re: string) => (read ? `(${re})` : `(?:${re})`);
const ENTRY = String.raw`\{"token":${STR},"logprob":${NUM},"bytes":\[(?:${NUM}(?:,${NUM})*)?\],"top_logprobs":\[\]\}`;
/** Each further entry's logprob (no string can hold `,"logprob":`: its quotes are escaped). */
const MORE_LOGPROB_RE = new RegExp(String.raw`,"logprob":(${NUM}),"bytes":\[`, 'g');
const MORE_ENTRY_RE = new RegExp(
  String.raw`,\{"token":(${STR}),"logprob":(${NUM}),"bytes":\[${NUMS}\],"top_logprobs":\[\]\}`,
  'y',
);
/**
 * CHOICE `]}` up to the end of the text, sticky (from `lastIndex`: one regex for every stream, as
 * V8 compiles every new source anew). Groups: 1 index, 2 the delta's key, 3 its string, 4 the
 * logprobs value, [token,] logprob, [bytes,] of its first entry, the entries after it (vLLM sends
 * several when it streams tokens faster than they are read), finish_reason, the ids; token and bytes
 * only with `entries` (fewer groups, fewer strings made per chunk).
 */
const choiceRe = (entries: boolean) =>
  new RegExp(
    String.raw`\{"index":(0|[1-9]\d{0,5}),"delta":\{"(content|reasoning_content|reasoning)":(${STR})\},"logprobs":(null|\{"content":\[\{"token":${group(entries, STR)},"logprob":(${NUM}),"bytes":\[${group(entries, `(?:${NUM}(?:,${NUM})*)?`)}\],"top_logprobs":\[\]\}((?:,${ENTRY})*)\]\}),"finish_reason":(null|${STR})(?:,"stop_reason":null)?,"token_ids":\[${NUMS}\]\}\]\}$`,
    'y',
  );
const CHOICE_RE = choiceRe(false);
const CHOICE_ENTRIES_RE = choiceRe(true);
const STOP_NULL = ',"stop_reason":null';
/** Text before the logprobs value, past the head and the groups 1-3: `{"index":` `,"delta":{"` `":` `},"logprobs":`. */
const FIXED_BEFORE_LP = 9 + 11 + 2 + 13;
/** Around the ids: `,"token_ids":[` and `]`. */
const FIXED_IDS = 14 + 1;

/** A JSON string's value (JSON.parse only when it has an escape). */
const strValue = (quoted: string): string =>
  quoted.indexOf('\\') < 0 ? quoted.slice(1, -1) : JSON.parse(quoted);
const numbers = (list: string): number[] => {
  if (list === '') return [];
  if (list.indexOf(',') < 0) return [Number(list)];
  return list.split(',').map(Number);
};

/**
 * Reads chunks of one stream (its fields describe the last chunk that `scan` accepted). `entries`:
 * keep each token's logprob entry (the harness sees them), not only its logprob.
 */
export class ChatChunkScanner {
  /** The text every accepted chunk starts with; null until `learn`. */
  head: string | null = null;
  index = 0;
  /** The delta's text went to `reasoning_content` / `reasoning`, not `content`. */
  reasoning = false;
  /** The delta's key. */
  key = 'content';
  text = '';
  /** `"logprobs"` was an object, not null; then `logprob` (and with `entries`, `entry`) is its one entry. */
  hasLp = false;
  logprob = 0;
  entry: LogprobEntry | null = null;
  /** The entries after the first, as text (`,{…}` each; read by pushLogprobs / pushEntries). */
  more = '';
  /** The token ids' JSON text, without brackets (read by pushIds). */
  idsText = '';
  finish: string | null = null;
  /** [lpStart, lpEnd): the logprobs object's text (when hasLp). */
  lpStart = -1;
  lpEnd = -1;
  /** [idsStart, idsEnd): `,"token_ids":[…]`. */
  idsStart = -1;
  idsEnd = -1;

  /** The head's id, created and model, as JSON.parse reads them from the head's text. */
  private headFields: { id: string; created: number; model: string } | null = null;

  constructor(private readonly entries: boolean) {}

  /**
   * Takes the head of `obj`, a chunk JSON.parse read, when it is a chat chunk the scanner could read
   * (its own text need not be in the accepted shape: the head is what JSON.stringify writes).
   */
  learn(obj: Json): void {
    if (
      obj.object !== 'chat.completion.chunk' ||
      typeof obj.id !== 'string' ||
      typeof obj.model !== 'string' ||
      typeof obj.created !== 'number' ||
      !Number.isFinite(obj.created)
    )
      return;
    const head = `{"id":${JSON.stringify(obj.id)},"object":"chat.completion.chunk","created":${JSON.stringify(obj.created)},"model":${JSON.stringify(obj.model)},"choices":[`;
    if (head === this.head) return;
    this.head = head;
    // JSON.stringify then JSON.parse: -0 reads back as 0, as it does from the chunks' text.
    this.headFields = { id: obj.id, created: JSON.parse(JSON.stringify(obj.created)), model: obj.model };
  }

  /**
   * The chunk `scan` just accepted as JSON.parse makes it (needs `entries`): for an output that
   * takes chunk objects (a wire translator), without parsing the text.
   */
  chunk(raw: string): Json {
    const h = this.headFields as { id: string; created: number; model: string };
    const choice: Json = {
      index: this.index,
      delta: { [this.key]: this.text },
      logprobs: this.hasLp ? { content: this.pushEntries([]) } : null,
      finish_reason: this.finish,
    };
    if (raw.slice(this.idsStart - STOP_NULL.length, this.idsStart) === STOP_NULL) choice.stop_reason = null;
    const ids: number[] = [];
    this.pushIds(ids);
    choice.token_ids = ids;
    return {
      id: h.id,
      object: 'chat.completion.chunk',
      created: h.created,
      model: h.model,
      choices: [choice],
    };
  }

  /** Reads `raw` when it has the accepted shape (true), else false (the fields are then stale). */
  scan(raw: string): boolean {
    const head = this.head;
    // A sliced string compared with ===: a memory compare (startsWith is several times slower).
    if (head === null || raw.slice(0, head.length) !== head) return false;
    const re = this.entries ? CHOICE_ENTRIES_RE : CHOICE_RE;
    re.lastIndex = head.length;
    const m = re.exec(raw);
    if (!m) return false;
    const e = this.entries ? 1 : 0; // the token's group before the logprob's, the bytes' after
    this.index = m[1] === '0' ? 0 : Number(m[1]);
    this.key = m[2];
    this.reasoning = m[2] !== 'content';
    this.text = strValue(m[3]);
    const lp = m[4];
    this.hasLp = lp !== 'null';
    if (this.hasLp) {
      this.logprob = Number(m[5 + e]);
      this.entry = this.entries
        ? { token: strValue(m[5]), logprob: this.logprob, bytes: numbers(m[7]), top_logprobs: [] }
        : null;
      this.more = m[6 + 2 * e];
      this.lpStart = head.length + m[1].length + m[2].length + m[3].length + FIXED_BEFORE_LP;
      this.lpEnd = this.lpStart + lp.length;
    }
    const finish = m[7 + 2 * e];
    this.finish = finish === 'null' ? null : strValue(finish);
    const ids = m[8 + 2 * e];
    this.idsText = ids;
    this.idsEnd = raw.length - 3;
    this.idsStart = this.idsEnd - ids.length - FIXED_IDS;
    return true;
  }

  /** Appends each entry's logprob to `out`. */
  pushLogprobs(out: number[]): void {
    out.push(this.logprob);
    if (this.more === '') return;
    MORE_LOGPROB_RE.lastIndex = 0;
    for (let m = MORE_LOGPROB_RE.exec(this.more); m; m = MORE_LOGPROB_RE.exec(this.more))
      out.push(Number(m[1]));
  }

  /** Appends the entries to `out` (needs `entries`); `out`. */
  pushEntries(out: LogprobEntry[]): LogprobEntry[] {
    out.push(this.entry as LogprobEntry);
    const more = this.more;
    MORE_ENTRY_RE.lastIndex = 0;
    while (MORE_ENTRY_RE.lastIndex < more.length) {
      const m = MORE_ENTRY_RE.exec(more) as RegExpExecArray; // the choice's regex matched them
      out.push({ token: strValue(m[1]), logprob: Number(m[2]), bytes: numbers(m[3]), top_logprobs: [] });
    }
    return out;
  }

  /** Appends the token ids to `out`; how many there were. */
  pushIds(out: number[]): number {
    const t = this.idsText;
    if (t === '') return 0;
    if (t.indexOf(',') < 0) {
      out.push(Number(t));
      return 1;
    }
    const list = t.split(',');
    for (const x of list) out.push(Number(x));
    return list.length;
  }
}

/** `"data: …\n\n"` for a chunk `scanner` accepted, without the parts the harness did not ask for. */
export function scannedFrame(
  raw: string,
  sc: ChatChunkScanner,
  keepIds: boolean,
  keepLogprobs: boolean,
): string {
  const cutLp = !keepLogprobs && sc.hasLp;
  if (keepIds) {
    if (!cutLp) return `data: ${raw}\n\n`;
    return `data: ${raw.slice(0, sc.lpStart)}null${raw.slice(sc.lpEnd)}\n\n`;
  }
  if (!cutLp) return `data: ${raw.slice(0, sc.idsStart)}${raw.slice(sc.idsEnd)}\n\n`;
  return `data: ${raw.slice(0, sc.lpStart)}null${raw.slice(sc.lpEnd, sc.idsStart)}${raw.slice(sc.idsEnd)}\n\n`;
}
