// A bridged prompt goes to the backend's `/v1/completions` as token ids; this turns the completion
// (text, token_ids, logprobs, finish_reason) back into the chat completion the harness asked for,
// parsing Qwen3/Hermes-style `<think>…</think>` into reasoning_content and `<tool_call>{…}</tool_call>`
// blocks into tool_calls, the way vLLM's qwen3 reasoning parser and hermes tool parser do.

import { randomBytes } from 'node:crypto';
import { parseBoundedJson } from '../../api/body';

export interface ParsedAssistant {
  reasoning: string | null;
  content: string;
  toolCalls: { name: string; arguments: string }[];
}

const THINK_OPEN = '<think>';
const THINK_CLOSE = '</think>';
const CALL_OPEN = '<tool_call>';
const CALL_CLOSE = '</tool_call>';

function parseCall(body: string): { name: string; arguments: string } | null {
  try {
    const v = parseBoundedJson(body.trim());
    if (!v || typeof v !== 'object' || typeof v.name !== 'string') return null;
    const args = v.arguments ?? v.parameters ?? {};
    return { name: v.name, arguments: typeof args === 'string' ? args : JSON.stringify(args) };
  } catch {
    return null;
  }
}

function addReasoning(out: ParsedAssistant, s: string): void {
  if (s) out.reasoning = (out.reasoning ?? '') + s;
}

// like vLLM's qwen3 parser: reasoning and content are the raw text between/after the tags
function addContent(out: ParsedAssistant, s: string): void {
  if (s) out.content += s;
}

/**
 * Incremental parser of the assistant text. `push` returns what became certain; text that could still
 * be the start of a tag is held back until the next push or `finish`.
 */
export class AssistantTextParser {
  private buf = '';
  private mode: 'start' | 'reasoning' | 'content' | 'call' = 'start';

  /** `thinking`: the prompt already opened a think block (the model's output starts inside it). */
  constructor(private opts: { thinking?: boolean } = {}) {}

  push(text: string, final = false): ParsedAssistant {
    this.buf += text;
    const out: ParsedAssistant = { reasoning: null, content: '', toolCalls: [] };
    while (this.step(out, final));
    if (final && this.buf) {
      if (this.mode === 'reasoning') addReasoning(out, this.buf);
      else addContent(out, this.buf);
      this.buf = '';
    }
    return out;
  }

  /** One step in the current mode, its text added to `out`; false when it must wait for more text. */
  private step(out: ParsedAssistant, final: boolean): boolean {
    if (this.mode === 'start') {
      const lead = this.buf.replace(/^\s+/, '');
      if (this.opts.thinking || lead.startsWith(THINK_OPEN)) {
        if (!this.opts.thinking) this.buf = lead.slice(THINK_OPEN.length);
        this.mode = 'reasoning';
        out.reasoning = out.reasoning ?? '';
        return true;
      }
      if (!final && THINK_OPEN.startsWith(lead)) return false; // maybe '<thi'
      this.mode = 'content';
      return true;
    }
    if (this.mode === 'reasoning' || this.mode === 'content') {
      const [tag, add, next] =
        this.mode === 'reasoning'
          ? ([THINK_CLOSE, addReasoning, 'content'] as const)
          : ([CALL_OPEN, addContent, 'call'] as const);
      const i = this.buf.indexOf(tag);
      if (i >= 0) {
        add(out, this.buf.slice(0, i));
        this.buf = this.buf.slice(i + tag.length);
        this.mode = next;
        return true;
      }
      const k = this.hold(tag, final);
      add(out, this.buf.slice(0, this.buf.length - k));
      this.buf = this.buf.slice(this.buf.length - k);
      return false;
    }
    // call
    const i = this.buf.indexOf(CALL_CLOSE);
    if (i >= 0) {
      const body = this.buf.slice(0, i);
      this.buf = this.buf.slice(i + CALL_CLOSE.length).replace(/^\s+/, '');
      const call = parseCall(body);
      if (call) out.toolCalls.push(call);
      else addContent(out, CALL_OPEN + body + CALL_CLOSE);
      this.mode = 'content';
      return true;
    }
    if (final) {
      // an unclosed call at the end (stopped on </tool_call> or truncated)
      const call = parseCall(this.buf);
      if (call) out.toolCalls.push(call);
      else addContent(out, CALL_OPEN + this.buf);
      this.buf = '';
    }
    return false;
  }

  /** Longest suffix of buf that is a proper prefix of tag: must wait for more text. */
  private hold(tag: string, final: boolean): number {
    if (final) return 0;
    for (let k = Math.min(tag.length - 1, this.buf.length); k > 0; k--)
      if (tag.startsWith(this.buf.slice(this.buf.length - k))) return k;
    return 0;
  }

  finish(): ParsedAssistant {
    return this.push('', true);
  }
}

export function parseAssistantText(text: string, opts: { thinking?: boolean } = {}): ParsedAssistant {
  return new AssistantTextParser(opts).push(text, true);
}

// ---------- chat request → completions request ----------

/** Sampling fields that mean the same in vLLM chat and completions requests. */
const SAME = [
  'temperature',
  'top_p',
  'top_k',
  'min_p',
  'presence_penalty',
  'frequency_penalty',
  'repetition_penalty',
  'seed',
  'stop',
  'stop_token_ids',
  'n',
  'ignore_eos',
  'min_tokens',
  'logit_bias',
  'skip_special_tokens',
  'spaces_between_special_tokens',
  'include_stop_str_in_output',
  'stream',
  'stream_options',
] as const;

/**
 * The `/v1/completions` body that samples like `chat` would, from a token prompt. Chat features a token
 * prompt cannot honour (forced tool choice, structured output, assistant prefill) give `ok: false`.
 * `defaultMaxTokens` is used when the chat request sets no limit (completions would default to 16):
 * pass max_model_len − prompt length.
 */
export function completionRequestFor(
  chat: Record<string, any>,
  prompt_ids: number[],
  opts: { defaultMaxTokens?: number } = {},
): { ok: true; body: Record<string, unknown> } | { ok: false; reason: string } {
  const tc = chat.tool_choice;
  if (tc !== undefined && tc !== 'auto' && tc !== 'none')
    return { ok: false, reason: 'tool_choice forces a tool: needs the chat endpoint' };
  if (chat.response_format && chat.response_format.type !== 'text')
    return { ok: false, reason: 'structured output: needs the chat endpoint' };
  for (const k of ['guided_json', 'guided_regex', 'guided_choice', 'guided_grammar', 'structured_outputs'])
    if (chat[k] != null) return { ok: false, reason: `${k}: needs the chat endpoint` };
  if (chat.continue_final_message || chat.add_generation_prompt === false)
    return { ok: false, reason: 'assistant prefill: needs the chat endpoint' };
  const max = chat.max_completion_tokens ?? chat.max_tokens ?? opts.defaultMaxTokens;
  if (max == null) return { ok: false, reason: 'no max_tokens and no default: completions would stop at 16' };
  const body: Record<string, unknown> = { model: chat.model, prompt: prompt_ids, max_tokens: max };
  for (const k of SAME) if (chat[k] !== undefined) body[k] = chat[k];
  if (chat.logprobs) body.logprobs = chat.top_logprobs ?? 0;
  body.return_token_ids = true;
  return { ok: true, body };
}

// ---------- completion → chat ----------

/**
 * A token's UTF-8 bytes as numbers (chat logprobs' `bytes`): an ASCII token's are its character codes,
 * without a Buffer and its iterator (a call's 16-1,000 tokens each took one).
 */
export function utf8Bytes(token: string): number[] {
  const out: number[] = [];
  for (let i = 0; i < token.length; i++) {
    const c = token.charCodeAt(i);
    if (c >= 128) return Array.from(Buffer.from(token, 'utf8'));
    out.push(c);
  }
  return out;
}

/** vLLM completion logprobs (`tokens`, `token_logprobs`, `top_logprobs`) → chat `logprobs.content`. */
function chatLogprobs(lp: any): { content: unknown[] } | null {
  if (!lp || !Array.isArray(lp.token_logprobs)) return null;
  return {
    content: lp.token_logprobs.map((logprob: number | null, i: number) => {
      const token = String(lp.tokens?.[i] ?? '');
      const top = lp.top_logprobs?.[i];
      return {
        token,
        logprob: logprob ?? 0,
        bytes: utf8Bytes(token),
        top_logprobs: top
          ? Object.entries(top).map(([t, l]) => ({
              token: t,
              logprob: l as number,
              bytes: utf8Bytes(t),
            }))
          : [],
      };
    }),
  };
}

const callId = () => `call_${randomBytes(12).toString('hex')}`;

export interface CompletionToChatOptions {
  /** The model name to report (the harness's). */
  model: string;
  /** The token prompt sent to /v1/completions (reported as prompt_token_ids and prompt_tokens). */
  prompt_ids: number[];
  /** True when the generation prompt opened a think block itself (Qwen3 templates do not; some do). */
  thinking?: boolean;
}

/** A non-streaming `/v1/completions` response (vLLM, `return_token_ids`) → chat completion. */
export function completionToChat(completion: any, opts: CompletionToChatOptions): Record<string, any> {
  const choice = completion?.choices?.[0] ?? {};
  const text: string = choice.text ?? '';
  const parsed = parseAssistantText(text, { thinking: opts.thinking });
  const message: Record<string, unknown> = { role: 'assistant', content: parsed.content || null };
  if (parsed.reasoning !== null) message.reasoning_content = parsed.reasoning;
  if (parsed.toolCalls.length)
    message.tool_calls = parsed.toolCalls.map((c) => ({
      id: callId(),
      type: 'function',
      function: { name: c.name, arguments: c.arguments },
    }));
  const tokenIds: number[] | undefined = choice.token_ids ?? undefined;
  const completionTokens = completion?.usage?.completion_tokens ?? tokenIds?.length ?? 0;
  return {
    id: String(completion?.id ?? `cmpl-${randomBytes(8).toString('hex')}`).replace(/^cmpl-/, 'chatcmpl-'),
    object: 'chat.completion',
    created: completion?.created ?? Math.floor(Date.now() / 1000),
    model: opts.model,
    choices: [
      {
        index: 0,
        message,
        logprobs: chatLogprobs(choice.logprobs),
        finish_reason:
          parsed.toolCalls.length && choice.finish_reason === 'stop' ? 'tool_calls' : choice.finish_reason,
        stop_reason: choice.stop_reason ?? null,
        token_ids: tokenIds,
      },
    ],
    usage: {
      prompt_tokens: opts.prompt_ids.length,
      completion_tokens: completionTokens,
      total_tokens: opts.prompt_ids.length + completionTokens,
    },
    prompt_token_ids: opts.prompt_ids,
  };
}

/**
 * Streaming: feed each `/v1/completions` chunk, get chat chunks (delta.reasoning_content, delta.content,
 * delta.tool_calls with whole calls once closed, token_ids and logprobs per chunk, prompt_token_ids on
 * the first, a usage chunk at the end).
 */
export class CompletionToChatStream {
  private parser: AssistantTextParser;
  private started = false;
  private calls = 0;
  private id = '';
  private created = 0;
  private finish: string | null = null;
  private stopReason: unknown = null;
  private completionTokens = 0;
  private sawUsage = false;

  constructor(private opts: CompletionToChatOptions) {
    this.parser = new AssistantTextParser({ thinking: opts.thinking });
  }

  private chunk(delta: Record<string, unknown>, extra: Record<string, unknown> = {}): Record<string, any> {
    return {
      id: this.id,
      object: 'chat.completion.chunk',
      created: this.created,
      model: this.opts.model,
      choices: [{ index: 0, delta, logprobs: null, finish_reason: null, ...extra }],
    };
  }

  private deltas(p: ParsedAssistant, extra: Record<string, unknown>): Record<string, any>[] {
    const out: Record<string, any>[] = [];
    const first = { ...extra };
    const take = () => {
      const e = { ...first };
      for (const k of Object.keys(first)) delete first[k];
      return e;
    };
    if (p.reasoning) out.push(this.chunk({ reasoning_content: p.reasoning }, take()));
    if (p.content) out.push(this.chunk({ content: p.content }, take()));
    for (const c of p.toolCalls)
      out.push(
        this.chunk(
          {
            tool_calls: [
              {
                index: this.calls++,
                id: callId(),
                type: 'function',
                function: { name: c.name, arguments: c.arguments },
              },
            ],
          },
          take(),
        ),
      );
    // token ids / logprobs of a chunk whose text is all held back still go out, on an empty delta
    if (Object.keys(first).length && Object.values(first).some((v) => v != null))
      out.push(this.chunk({}, take()));
    return out;
  }

  push(completionChunk: any): Record<string, any>[] {
    const out: Record<string, any>[] = [];
    if (!this.started) {
      this.started = true;
      this.id = String(completionChunk?.id ?? `cmpl-${randomBytes(8).toString('hex')}`).replace(
        /^cmpl-/,
        'chatcmpl-',
      );
      this.created = completionChunk?.created ?? Math.floor(Date.now() / 1000);
      const first = this.chunk({ role: 'assistant', content: '' });
      first.prompt_token_ids = this.opts.prompt_ids;
      out.push(first);
    }
    if (completionChunk?.usage) {
      this.sawUsage = true;
      this.completionTokens = completionChunk.usage.completion_tokens ?? this.completionTokens;
    }
    const choice = completionChunk?.choices?.[0];
    if (!choice) return out;
    const ids: number[] | undefined = choice.token_ids ?? undefined;
    if (!this.sawUsage && ids) this.completionTokens += ids.length;
    const extra: Record<string, unknown> = {};
    if (ids) extra.token_ids = ids;
    const lp = chatLogprobs(choice.logprobs);
    if (lp) extra.logprobs = lp;
    out.push(...this.deltas(this.parser.push(choice.text ?? ''), extra));
    if (choice.finish_reason) {
      this.finish = choice.finish_reason;
      this.stopReason = choice.stop_reason ?? null;
    }
    return out;
  }

  /** Chunks after the backend's last one: held-back text, the finish reason and the usage chunk. */
  end(): Record<string, any>[] {
    const out = this.deltas(this.parser.finish(), {});
    const finish = this.calls && this.finish === 'stop' ? 'tool_calls' : (this.finish ?? 'stop');
    out.push(this.chunk({}, { finish_reason: finish, stop_reason: this.stopReason }));
    const p = this.opts.prompt_ids.length;
    out.push({
      id: this.id,
      object: 'chat.completion.chunk',
      created: this.created,
      model: this.opts.model,
      choices: [],
      usage: {
        prompt_tokens: p,
        completion_tokens: this.completionTokens,
        total_tokens: p + this.completionTokens,
      },
    });
    return out;
  }
}
