// vLLM responses: streams assembled into the non-streaming shape, the token ids and logprobs read
// out of them, and vLLM's extras stripped from what a harness gets when it did not ask for them.
// Backend kind 'chat' = /v1/chat/completions, 'completions' = /v1/completions.
import type { ChatChunkScanner, LogprobEntry } from './chunk-scan';
import type { Json } from './json';

export type BackendKind = 'chat' | 'completions';

interface ChoiceAcc {
  index: number;
  role: string | null;
  content: string;
  hasContent: boolean;
  reasoning: string;
  hasReasoning: boolean;
  toolCalls: { id?: string; type?: string; function: { name: string; arguments: string } }[];
  text: string;
  lpContent: unknown[];
  /** Without `logprobEntries`: only each token's logprob. */
  lpValues: number[];
  hasLp: boolean;
  tokens: string[];
  tokenLogprobs: (number | null)[];
  topLogprobs: unknown[];
  textOffset: number[];
  tokenIds: number[] | null;
  promptIds: number[] | null;
  finish: string | null;
  stopReason: unknown;
}

/** Folds a backend stream's chunks into the response a non-streaming request would have got. */
export class StreamAssembler {
  private id = '';
  private created = 0;
  private model = '';
  private promptIds: number[] | null = null;
  private usage: Json | null = null;
  private readonly choices: ChoiceAcc[] = [];
  chunks = 0;

  /**
   * `logprobEntries: false` keeps only each token's logprob number, not vLLM's entries (token text,
   * bytes, top logprobs): for when the harness will not see them, which spares the memory (and GC)
   * of a long stream. The assembled result then carries `{logprob}` entries (chat) or
   * `token_logprobs` only (completions).
   */
  constructor(
    readonly kind: BackendKind,
    private readonly opts: { logprobEntries?: boolean } = {},
  ) {}

  private choice(index: number): ChoiceAcc {
    let c = this.choices[index];
    if (!c) {
      c = {
        index,
        role: null,
        content: '',
        hasContent: false,
        reasoning: '',
        hasReasoning: false,
        toolCalls: [],
        text: '',
        lpContent: [],
        lpValues: [],
        hasLp: false,
        tokens: [],
        tokenLogprobs: [],
        topLogprobs: [],
        textOffset: [],
        tokenIds: null,
        promptIds: null,
        finish: null,
        stopReason: null,
      };
      this.choices[index] = c;
    }
    return c;
  }

  push(chunk: Json): void {
    this.chunks++;
    if (!this.id && chunk.id) this.id = chunk.id;
    if (!this.created && chunk.created) this.created = chunk.created;
    if (!this.model && chunk.model) this.model = chunk.model;
    if (Array.isArray(chunk.prompt_token_ids) && !this.promptIds) this.promptIds = chunk.prompt_token_ids;
    if (chunk.usage) this.usage = chunk.usage;
    if (!Array.isArray(chunk.choices)) return;
    for (const ch of chunk.choices as Json[]) {
      const c = this.choice(typeof ch.index === 'number' ? ch.index : 0);
      if (Array.isArray(ch.token_ids)) {
        if (!c.tokenIds) c.tokenIds = [];
        for (const t of ch.token_ids) c.tokenIds.push(t);
      }
      if (Array.isArray(ch.prompt_token_ids) && !c.promptIds) c.promptIds = ch.prompt_token_ids;
      if (ch.finish_reason) c.finish = ch.finish_reason;
      if (ch.stop_reason !== undefined && ch.stop_reason !== null) c.stopReason = ch.stop_reason;
      if (this.kind === 'chat') {
        const d = ch.delta ?? {};
        if (d.role) c.role = d.role;
        if (typeof d.content === 'string') {
          c.content += d.content;
          c.hasContent = true;
        }
        const r = typeof d.reasoning_content === 'string' ? d.reasoning_content : d.reasoning;
        if (typeof r === 'string') {
          c.reasoning += r;
          c.hasReasoning = true;
        }
        if (Array.isArray(d.tool_calls)) {
          for (const tc of d.tool_calls as Json[]) {
            const i = typeof tc.index === 'number' ? tc.index : c.toolCalls.length;
            if (!c.toolCalls[i]) c.toolCalls[i] = { function: { name: '', arguments: '' } };
            const t = c.toolCalls[i];
            if (tc.id) t.id = tc.id;
            if (tc.type) t.type = tc.type;
            if (tc.function?.name) t.function.name += tc.function.name;
            if (typeof tc.function?.arguments === 'string') t.function.arguments += tc.function.arguments;
          }
        }
        if (ch.logprobs && Array.isArray(ch.logprobs.content)) {
          c.hasLp = true;
          if (this.opts.logprobEntries === false)
            for (const e of ch.logprobs.content) c.lpValues.push(Number(e?.logprob));
          else for (const e of ch.logprobs.content) c.lpContent.push(e);
        }
      } else {
        if (typeof ch.text === 'string') c.text += ch.text;
        const lp = ch.logprobs;
        if (lp && Array.isArray(lp.token_logprobs)) {
          c.hasLp = true;
          for (const x of lp.token_logprobs) c.tokenLogprobs.push(x);
          if (this.opts.logprobEntries !== false) {
            c.tokens.push(...(lp.tokens ?? []));
            c.topLogprobs.push(...(lp.top_logprobs ?? []));
            c.textOffset.push(...(lp.text_offset ?? []));
          }
        }
      }
    }
  }

  /**
   * `push` of the chunk `sc` just accepted (chat): what `push(JSON.parse(raw))` does with a chunk of
   * that shape (its id, created and model are the head's, which a pushed chunk already set).
   */
  pushScanned(sc: ChatChunkScanner): void {
    this.chunks++;
    const c = this.choice(sc.index);
    if (!c.tokenIds) c.tokenIds = [];
    sc.pushIds(c.tokenIds);
    if (sc.finish) c.finish = sc.finish;
    if (sc.reasoning) {
      c.reasoning += sc.text;
      c.hasReasoning = true;
    } else {
      c.content += sc.text;
      c.hasContent = true;
    }
    if (sc.hasLp) {
      c.hasLp = true;
      if (this.opts.logprobEntries === false) sc.pushLogprobs(c.lpValues);
      else sc.pushEntries(c.lpContent as LogprobEntry[]);
    }
  }

  /** The assembled non-streaming response (vLLM extras included). */
  result(): Json {
    const choices = this.choices.filter(Boolean).map((c) => {
      const base: Json =
        this.kind === 'chat'
          ? {
              index: c.index,
              message: {
                role: c.role ?? 'assistant',
                content: c.hasContent || c.toolCalls.length === 0 ? c.content : null,
                ...(c.hasReasoning ? { reasoning_content: c.reasoning } : {}),
                ...(c.toolCalls.length > 0
                  ? {
                      tool_calls: c.toolCalls.map((t) => ({
                        id: t.id,
                        type: t.type ?? 'function',
                        function: t.function,
                      })),
                    }
                  : {}),
              },
              logprobs: c.hasLp
                ? {
                    content:
                      this.opts.logprobEntries === false
                        ? c.lpValues.map((logprob) => ({ logprob }))
                        : c.lpContent,
                  }
                : null,
              finish_reason: c.finish,
            }
          : {
              index: c.index,
              text: c.text,
              logprobs: c.hasLp
                ? {
                    tokens: c.tokens,
                    token_logprobs: c.tokenLogprobs,
                    top_logprobs: c.topLogprobs,
                    text_offset: c.textOffset,
                  }
                : null,
              finish_reason: c.finish,
            };
      if (c.stopReason !== null) base.stop_reason = c.stopReason;
      if (c.tokenIds) base.token_ids = c.tokenIds;
      if (c.promptIds) base.prompt_token_ids = c.promptIds;
      return base;
    });
    const out: Json = {
      id: this.id,
      object: this.kind === 'chat' ? 'chat.completion' : 'text_completion',
      created: this.created,
      model: this.model,
      choices,
    };
    if (this.usage) out.usage = this.usage;
    if (this.promptIds) out.prompt_token_ids = this.promptIds;
    return out;
  }
}

/** What the harness asked for itself (those extras stay in what it receives). */
export interface Asked {
  ids: boolean;
  logprobs: boolean;
}

export function askedOf(body: Json): Asked {
  return {
    ids: body.return_token_ids === true,
    logprobs: body.logprobs !== undefined && body.logprobs !== null && body.logprobs !== false,
  };
}

/** True when `json` carries extras the harness did not ask for. */
export function needsStrip(json: Json, asked: Asked): boolean {
  if (asked.ids && asked.logprobs) return false;
  if (!asked.ids && json.prompt_token_ids !== undefined) return true;
  if (!Array.isArray(json.choices)) return false;
  for (const c of json.choices as Json[]) {
    if (!asked.ids && (c.token_ids !== undefined || c.prompt_token_ids !== undefined)) return true;
    if (!asked.logprobs && c.logprobs != null) return true;
  }
  return false;
}

/** Remove (in place) the extras the proxy added for itself. */
export function strip(json: Json, asked: Asked): Json {
  if (!asked.ids) delete json.prompt_token_ids;
  if (Array.isArray(json.choices))
    for (const c of json.choices as Json[]) {
      if (!asked.ids) {
        delete c.token_ids;
        delete c.prompt_token_ids;
      }
      if (!asked.logprobs && c.logprobs != null) c.logprobs = null;
    }
  return json;
}

const IDS_AFTER_COMMA = /,"(?:prompt_)?token_ids":\[[^\]]*\]/g;
const IDS_FIRST = /\{"(?:prompt_)?token_ids":\[[^\]]*\],?/g;

/**
 * `strip` on a chunk's JSON text, without re-serialising it: token-id arrays are cut out and
 * `"logprobs":{…}` becomes `"logprobs":null`. Inside JSON strings every quote is escaped, so the
 * patterns (which end in an unescaped `":`) only ever match keys.
 */
export function stripText(raw: string, asked: Asked): string {
  let s = raw;
  if (!asked.ids && s.includes('token_ids"')) {
    s = s.replace(IDS_AFTER_COMMA, '');
    // Ids as an object's first key are rare (vLLM puts them last): skip that second pass over the text.
    if (s.includes('{"token_ids"') || s.includes('{"prompt_token_ids"')) s = s.replace(IDS_FIRST, '{');
  }
  if (!asked.logprobs) {
    let from = 0;
    for (;;) {
      const at = s.indexOf('"logprobs":{', from);
      if (at < 0) break;
      const open = at + 11;
      const close = matchingBrace(s, open);
      if (close < 0) break;
      s = `${s.slice(0, open)}null${s.slice(close + 1)}`;
      from = open + 4;
    }
  }
  return s;
}

/** Index of the `}` closing the object that opens at `open` (strings skipped), or -1. */
function matchingBrace(s: string, open: number): number {
  let depth = 0;
  for (let i = open; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === 34) {
      // a string: skip to its closing quote
      for (i++; i < s.length; i++) {
        const d = s.charCodeAt(i);
        if (d === 92) i++;
        else if (d === 34) break;
      }
    } else if (c === 123 || c === 91) depth++;
    else if (c === 125 || c === 93) {
      depth--;
      if (depth === 0) return c === 125 ? i : -1;
    }
  }
  return -1;
}
