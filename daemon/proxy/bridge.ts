// Wiring of the token-in-token-out bridge (daemon/proxy/tito) into the proxy: per rollout, the last
// chat call's messages and sampled tokens are remembered; when the next request resends that history
// as text, the prompt is rebuilt from the recorded tokens and sent to /v1/completions as token ids.
import { join } from 'node:path';
import { BoundedMap, jsonBytes } from '../bounded-map';
import { errorText } from '../error-text';
import { readText, sendWhole } from '../http';
import type { DaemonConfig } from '../protocol/config';
import type { HistoryChange } from '../protocol/entities';
import { type LocalPlan, planLocal } from '../tokenize/plan';
import { firstDifference, LocalTokenizers, type TokenizerNote } from '../tokenize/registry';
import type { Json } from './json';
import {
  type BridgePlan,
  type BridgeRequest,
  backendTokenizer,
  type ChatMessageLike,
  type ChatTokenizer,
  completionRequestFor,
  messageChange,
  type PreviousCall,
  planBridge,
  type TokenizerFetch,
} from './tito';

interface Remembered extends PreviousCall {
  attemptId: string | null;
}

export type BridgeDecision =
  | {
      ok: true;
      body: Json;
      /** `body`'s JSON text, its token prompt written from the last one's text (null: serialise it). */
      bodyText: string | null;
      /** `bodyText` as UTF-8 bytes, what is sent (null with it). */
      bodyBytes: Buffer | null;
      prompt_ids: number[];
      reused_tokens: number;
      /** The generation prompt opened a think block itself (the output starts inside it). */
      thinking: boolean;
      note: TokenizerNote;
    }
  | { ok: false; reason: string; change?: HistoryChange; note?: TokenizerNote };

/** Calls remembered per rollout: a main conversation's last call survives a few side calls between its turns. */
const KEPT_PER_ROLLOUT = 4;

/**
 * Of a rollout's remembered calls (oldest first), the one `messages` continues: the newest whose
 * history the request starts with, else the newest with the same first message (the same conversation,
 * edited), else the newest.
 */
function previousFor(kept: Remembered[], messages: ChatMessageLike[]): Remembered {
  // One remembered call (no side calls between turns, the usual case): it is the one, whatever the
  // comparison below would say; planBridge compares it with the request anyway.
  if (kept.length === 1) return kept[0];
  const newestFirst = [...kept].reverse();
  const starts = (r: Remembered, upTo: number) =>
    messages.length > upTo && r.messages.slice(0, upTo).every((m, i) => !messageChange(m, messages[i]));
  return (
    newestFirst.find((r) => starts(r, r.messages.length)) ??
    newestFirst.find((r) => r.messages.length > 0 && starts(r, 1)) ??
    newestFirst[0]
  );
}

/**
 * fetch's shape over the proxy's own backend client (undici's pool, the answer gathered whole by its
 * request handler: sendWhole): a bridged call asks the backend's
 * /tokenize and /detokenize ~15 times, and global fetch cost about 0.8 ms of CPU each (bench
 * proxy.conversation: 14-16 ms of proxy CPU a bridged call with fetch, 3.3-3.7 with this).
 */
const viaProxyClient: TokenizerFetch = async (url, init) => {
  const res = await sendWhole(url, {
    method: init.method,
    headers: init.headers,
    body: init.body,
    timeoutMs: 30_000,
    idempotent: true, // /tokenize and /detokenize: safe to send again
  });
  const text = await readText(res);
  const status = res.statusCode ?? 502;
  return {
    ok: status >= 200 && status < 300,
    status,
    text: async () => text,
    json: async () => JSON.parse(text),
  };
};

/** Whether `ids` begins with every id of `prefix`. */
function startsWith(ids: readonly number[], prefix: readonly number[]): boolean {
  if (ids.length < prefix.length) return false;
  for (let i = 0; i < prefix.length; i++) if (ids[i] !== prefix[i]) return false;
  return true;
}

/** Whether every id is an integer, as JSON writes it and `join(',')` alike. */
function integers(ids: readonly number[], from: number): boolean {
  for (let i = from; i < ids.length; i++) if (!Number.isSafeInteger(ids[i])) return false;
  return true;
}

/**
 * The completions body's JSON text around its prompt, `head` + `[ids]` + `rest` (JSON.stringify would
 * write the same): `prompt` is its second key, after `model`. Null when the body is not in that shape.
 */
function completionFrame(body: Json): { head: string; rest: string } | null {
  const head = `{"model":${JSON.stringify(body.model)},"prompt":`;
  const rest = JSON.stringify({ ...body, prompt: 0 });
  if (!rest.startsWith(`${head}0`)) return null;
  return { head, rest: rest.slice(head.length + 1) };
}

/** The completions body's JSON text with `prompt` written as `[promptText]`; null: see completionFrame. */
export function completionText(body: Json, promptText: string): string | null {
  const f = completionFrame(body);
  return f && `${f.head}[${promptText}]${f.rest}`;
}

/** Whether every character of `s` is ASCII (then its Latin-1 bytes are its UTF-8 bytes). */
const ascii = (s: string): boolean => {
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) >= 128) return false;
  return true;
};

/**
 * The same body as UTF-8 bytes, what is sent (undici would encode the text: ~70 KB of an agent's ids
 * a call, UTF-8's per-character walk over a string not yet flat). The ids' text is ASCII digits and
 * commas: with an ASCII head and rest (the usual body) the whole text is copied a byte a character
 * (Latin-1), which leaves `text` flat, as the record's comparison with the last one needs it anyway;
 * else the parts are written, the ids as Latin-1 and the rest as UTF-8.
 */
function completionBytes(text: string, head: string, promptText: string, rest: string): Buffer {
  if (ascii(head) && ascii(rest)) return Buffer.from(text, 'latin1');
  const a = Buffer.byteLength(head);
  const b = a + 1 + promptText.length;
  const out = Buffer.allocUnsafe(b + 1 + Buffer.byteLength(rest));
  out.write(head, 0, 'utf8');
  out[a] = 0x5b; // [
  out.write(promptText, a + 1, 'latin1');
  out[b] = 0x5d; // ]
  out.write(rest, b + 1, 'utf8');
  return out;
}

/**
 * Text and bytes of the completions body (null: serialise it, completionFrame's shape is not met);
 * `at`: where the prompt's text starts in `text`.
 */
export function completionBody(
  body: Json,
  promptText: string | null,
): { text: string; bytes: Buffer; at: number } | null {
  const f = promptText === null ? null : completionFrame(body);
  if (f === null || promptText === null) return null;
  const text = `${f.head}[${promptText}]${f.rest}`;
  return { text, bytes: completionBytes(text, f.head, promptText, f.rest), at: f.head.length + 1 };
}

/**
 * Token prompts sent, as the text of their ids (`1,2,3`): the next prompt of a conversation starts
 * with the last one, so its text is that text and the new ids (JSON.stringify of an agent's 12k ids
 * took ~130 µs). Keyed weakly by the prompt's array, which the answer and the next remember carry on:
 * a text lives no longer than its array, and BridgeMemory weighs the one it keeps per rollout.
 */
export class PromptTexts {
  private readonly texts = new WeakMap<readonly number[], string>();

  /**
   * The text of `ids` (kept for the next prompt), from `previous`'s when `ids` starts with it
   * (`continues`: the caller knows it does, as a bridge plan builds its prompt from the previous one).
   */
  text(previous: readonly number[] | null, ids: number[], continues = false): string | null {
    let head = previous ? this.texts.get(previous) : undefined;
    if (head !== undefined && !continues && !startsWith(ids, previous as readonly number[])) head = undefined;
    const from = head === undefined ? 0 : (previous as readonly number[]).length;
    if (!integers(ids, from)) return null;
    // JSON.stringify writes an integer as join does, at about twice join's speed (~1k new ids a turn)
    const tail = from >= ids.length ? '' : JSON.stringify(from === 0 ? ids : ids.slice(from)).slice(1, -1);
    const text = head === undefined || head === '' ? tail : tail === '' ? head : `${head},${tail}`;
    this.texts.set(ids, text);
    return text;
  }

  /**
   * The text kept for `ids`, `text`, taken from `whole` (the body it was written into at `at`): a slice of
   * it, so the kept text and the body (which the store keeps as the chain's last) are one copy, not two.
   */
  within(ids: readonly number[], text: string, whole: string, at: number): void {
    // the same string (the one `text` returned): === is then a pointer comparison
    if (this.texts.get(ids) === text) this.texts.set(ids, whole.slice(at, at + text.length));
  }

  /** The length of the text kept for `ids` (0: none). */
  length(ids: readonly number[]): number {
    return this.texts.get(ids)?.length ?? 0;
  }

  /** Drops the text of `ids`; its length (0: there was none). */
  forget(ids: readonly number[]): number {
    const n = this.length(ids);
    this.texts.delete(ids);
    return n;
  }
}

/**
 * Bytes the remembered calls of all rollouts may hold together: their messages, tools and answers as
 * jsonBytes weighs them, their ids at 8 bytes an id, a kept prompt text at a byte a character. Past it
 * the rollout remembered longest ago is forgotten first (its next call is rendered as text, a counted
 * fallback); a rollout's calls are forgotten as soon as its attempt is over (`forget`).
 */
export const BRIDGE_BUDGET_BYTES = 256 * 1024 * 1024;

/** What one remembered call weighs (its prompt text: the text PromptTexts keeps for its prompt ids). */
function rememberedBytes(r: Remembered, promptText: number): number {
  return (
    64 +
    8 * (r.prompt_ids.length + r.response_ids.length) +
    jsonBytes(r.messages) +
    jsonBytes(r.tools) +
    jsonBytes(r.chat_template_kwargs) +
    jsonBytes(r.assistant_message) +
    promptText
  );
}

/**
 * The daemon's own tokenizers: of the folders the config names, and of the files inference nodes serve
 * (kept under <data>/model-files); each loaded when a backend says it serves the model
 * (BridgeMemory.served), ahead of its calls. Null: neither, every bridged call asks the backend.
 */
export function localTokenizers(
  config: Pick<DaemonConfig, 'model_files' | 'tokenizer_check_every' | 'data'>,
  log?: (message: string, detail?: Record<string, unknown>) => void,
): LocalTokenizers | null {
  const cacheDir = config.data ? join(config.data, 'model-files') : null;
  if (!Object.keys(config.model_files ?? {}).length && !cacheDir) return null;
  return new LocalTokenizers(config.model_files ?? {}, config.tokenizer_check_every ?? 64, log, cacheDir);
}

export class BridgeMemory {
  /** Per rollout, its last calls (oldest first) and what they weigh (BRIDGE_BUDGET_BYTES). */
  private readonly last: BoundedMap<string, { kept: Remembered[]; bytes: number[] }>;
  /** One per backend and model: a handful, not per rollout. */
  private readonly tokenizers = new Map<string, ChatTokenizer>();
  private readonly promptTexts = new PromptTexts();

  constructor(
    budgetBytes = BRIDGE_BUDGET_BYTES,
    /** The daemon's own tokenizers (config model_files): a bridged call then asks the backend nothing. */
    private readonly locals: LocalTokenizers | null = null,
  ) {
    this.last = new BoundedMap(budgetBytes, (_, v) => this.forgetTexts(v.kept));
  }

  /**
   * A backend at `root` serves `models` (the pool has just asked it): their tokenizers are loaded now,
   * not on their first bridged call (Qwen3's load holds the event loop ~1 s).
   */
  served(root: string, models: readonly string[]): void {
    for (const m of models) void this.locals?.warm(m, root);
  }

  /** The bytes remembered now, and for how many rollouts. */
  get held(): { bytes: number; rollouts: number } {
    return { bytes: this.last.bytes, rollouts: this.last.size };
  }

  /** After its attempt is over (the rollout finished, or waits for another attempt): nothing to bridge from. */
  forget(rolloutId: string): void {
    const v = this.last.get(rolloutId);
    if (!v) return;
    this.last.delete(rolloutId);
    this.forgetTexts(v.kept);
  }

  private forgetTexts(kept: Remembered[]): void {
    for (const r of kept) this.promptTexts.forget(r.prompt_ids);
  }

  /** After a successful chat-shaped call: what the next call may reuse. */
  remember(rolloutId: string, attemptId: string | null, chat: Json, response: Json): void {
    const c0 = Array.isArray(response.choices) ? response.choices[0] : null;
    const prompt = response.prompt_token_ids;
    const sampled = c0?.token_ids;
    if (!Array.isArray(chat.messages) || !c0?.message || !Array.isArray(prompt) || !Array.isArray(sampled))
      return;
    const before = this.last.get(rolloutId) ?? { kept: [], bytes: [] };
    const kept: Remembered[] = [];
    const bytes: number[] = [];
    before.kept.forEach((r, i) => {
      if (r.attemptId !== attemptId) return;
      kept.push(r);
      // Only the newest prompt's text is kept: the next prompt of the conversation continues it.
      bytes.push(before.bytes[i] - this.promptTexts.forget(r.prompt_ids));
    });
    if (kept.length >= KEPT_PER_ROLLOUT) {
      kept.shift();
      bytes.shift();
    }
    const r: Remembered = {
      attemptId,
      messages: chat.messages,
      tools: chat.tools ?? null,
      chat_template_kwargs: chat.chat_template_kwargs ?? null,
      prompt_ids: prompt,
      response_ids: sampled,
      assistant_message: c0.message,
    };
    kept.push(r);
    bytes.push(rememberedBytes(r, this.promptTexts.length(prompt)));
    this.last.set(
      rolloutId,
      { kept, bytes },
      bytes.reduce((a, b) => a + b, 0),
    );
  }

  private tokenizer(root: string, model: string): ChatTokenizer {
    const key = `${root} ${model}`;
    let t = this.tokenizers.get(key);
    if (!t) {
      t = backendTokenizer(root, { model, fetch: viaProxyClient });
      this.tokenizers.set(key, t);
    }
    return t;
  }

  /** Whether and how to bridge `chat` (the body bound for backend `root`). */
  async decide(
    rolloutId: string,
    attemptId: string | null,
    chat: Json,
    root: string,
    maxModelLen: number | null,
  ): Promise<BridgeDecision> {
    const kept = this.last.get(rolloutId)?.kept.filter((r) => r.attemptId === attemptId);
    if (!kept?.length) return { ok: false, reason: 'no previous call' };
    if (typeof chat.n === 'number' && chat.n > 1) return { ok: false, reason: 'n > 1' };
    if (!Array.isArray(chat.messages)) return { ok: false, reason: 'no messages' };
    const previous = previousFor(kept, chat.messages);
    const request: BridgeRequest = {
      messages: chat.messages,
      tools: chat.tools ?? null,
      chat_template_kwargs: chat.chat_template_kwargs ?? null,
    };
    const model = String(chat.model);
    let { plan, note }: { plan: BridgePlan | null; note: TokenizerNote } = this.locals?.has(model, root)
      ? await this.localPlan(root, model, previous, request)
      : { plan: null, note: { tokenizer: 'backend' } };
    if (!plan) {
      try {
        plan = await planBridge({ previous, request, tokenizer: this.tokenizer(root, model) });
      } catch (e) {
        const reason = `tokenizer failed: ${errorText(e)}`;
        return { ok: false, reason, ...(note.tokenizer_check ? { note } : {}) };
      }
    }
    if (!plan.ok) {
      const { ok, reason, change } = plan;
      return { ok, reason, ...(change ? { change } : {}), ...(note.tokenizer_check ? { note } : {}) };
    }
    const req = completionRequestFor(chat, plan.prompt_ids, {
      defaultMaxTokens: maxModelLen ? maxModelLen - plan.prompt_ids.length : undefined,
    });
    if (!req.ok) return req;
    if (!req.body.logprobs) req.body.logprobs = 1;
    // every plan's prompt is the previous prompt, its answer and the new ids (reused_tokens counts the first two)
    const continues = plan.reused_tokens >= previous.prompt_ids.length;
    const promptText = this.promptTexts.text(previous.prompt_ids, plan.prompt_ids, continues);
    const written = completionBody(req.body, promptText);
    if (written) this.promptTexts.within(plan.prompt_ids, promptText as string, written.text, written.at);
    return {
      ok: true,
      body: req.body,
      bodyText: written?.text ?? null,
      bodyBytes: written?.bytes ?? null,
      prompt_ids: plan.prompt_ids,
      reused_tokens: plan.reused_tokens,
      thinking: plan.thinking,
      note,
    };
  }

  /**
   * The plan made with the daemon's own tokenizer of `model`, checked against the backend's /tokenize
   * when this call is one to check (the first: the whole rendering; then every n-th: the ids the plan
   * adds). plan null: the backend's tokenizer is to be used (the note says why).
   */
  private async localPlan(
    root: string,
    model: string,
    previous: PreviousCall,
    request: BridgeRequest,
  ): Promise<{ plan: BridgePlan | null; note: TokenizerNote }> {
    const locals = this.locals as LocalTokenizers;
    const backend = (why: string | null) => ({
      plan: null,
      note: { tokenizer: 'backend' as const, ...(why ? { tokenizer_check: why } : {}) },
    });
    const { tok, problem } = await locals.get(model, root);
    if (!tok) return backend(problem);
    const distrust = locals.distrusted(root, model);
    if (distrust) return backend(distrust);
    let plan: LocalPlan;
    try {
      plan = planLocal(previous, request, tok);
    } catch (e) {
      return backend(`the chat template failed in the daemon: ${errorText(e)}`);
    }
    if (!plan.ok) return { plan, note: { tokenizer: 'daemon' } };
    const verdict = locals.verdict(root, model);
    if (!verdict.check) return { plan, note: { tokenizer: 'daemon' } };
    const tools = request.tools?.length ? request.tools : undefined;
    const kwargs = request.chat_template_kwargs ?? undefined;
    let theirs: number[];
    try {
      theirs = await this.tokenizer(root, model).render(request.messages, tools, true, kwargs);
    } catch (e) {
      const why = `not checked: /tokenize failed (${errorText(e)})`;
      return { plan, note: { tokenizer: 'daemon', tokenizer_check: why } };
    }
    const decode = (ids: number[]) => tok.decode(ids);
    const differs = verdict.first
      ? firstDifference(tok.encode(tok.renderText(request.messages, tools, true, kwargs)), theirs, decode)
      : firstDifference(plan.tail, theirs.slice(-plan.tail.length), decode);
    if (differs) {
      const why = `the daemon's rendering disagreed with the backend's /tokenize ${differs}`;
      locals.distrust(root, model, why);
      return backend(why);
    }
    return {
      plan,
      note: {
        tokenizer: 'daemon',
        tokenizer_check: verdict.first ? 'checked whole against /tokenize' : 'checked against /tokenize',
      },
    };
  }
}
