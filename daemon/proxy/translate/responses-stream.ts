// Chat Completions chunks → Responses events (response.created, output items with their deltas,
// response.completed / .incomplete), and what the client was sent, assembled for the record.
import { newId, reasoningOf, sseFrame, usageOf } from './common';
import {
  callItem,
  idBase,
  messageItem,
  reasoningItem,
  responseObject,
  textPart,
  type Usage,
} from './responses-answer';
import type { ResponsesRequest } from './responses-schema';
import type { ChatChunk, WireStream } from './types';

type OpenItem =
  | { kind: 'reasoning'; index: number; text: string }
  | { kind: 'message'; index: number; text: string }
  | { kind: 'call'; index: number; n: number; callId: string; name: string; args: string };

export class ResponsesStream implements WireStream {
  private seq = 0;
  private started = false;
  private ended = false;
  private base = '';
  private createdAt = 0;
  private output: unknown[] = [];
  private open: OpenItem | null = null;
  private calls = new Map<number, number>(); // chat tool index → call number
  private hasMessage = false;
  private finish: string | null = null;
  private usage: Usage | null = null;
  private final: ReturnType<typeof responseObject> | null = null;

  constructor(private req: ResponsesRequest) {}

  private ev(type: string, fields: Record<string, unknown>): string {
    return sseFrame(type, { type, sequence_number: this.seq++, ...fields });
  }

  private status(): 'completed' | 'incomplete' {
    return this.finish === 'length' ? 'incomplete' : 'completed';
  }

  private start(chunk?: ChatChunk): string[] {
    if (this.started) return [];
    this.started = true;
    this.base = idBase(chunk?.id);
    this.createdAt = chunk?.created ?? Math.floor(Date.now() / 1000);
    const r = responseObject(this.req, this.base, this.createdAt, 'in_progress', [], null);
    return [this.ev('response.created', { response: r }), this.ev('response.in_progress', { response: r })];
  }

  private close(): string[] {
    const o = this.open;
    if (!o) return [];
    this.open = null;
    const st = this.status();
    if (o.kind === 'reasoning') {
      const item = reasoningItem(this.base, o.text);
      const id = item.id;
      this.output[o.index] = item;
      return [
        this.ev('response.reasoning_text.done', {
          item_id: id,
          output_index: o.index,
          content_index: 0,
          text: o.text,
        }),
        this.ev('response.content_part.done', {
          item_id: id,
          output_index: o.index,
          content_index: 0,
          part: { type: 'reasoning_text', text: o.text },
        }),
        this.ev('response.output_item.done', { output_index: o.index, item }),
      ];
    }
    if (o.kind === 'message') {
      const item = messageItem(this.base, o.text, st);
      this.output[o.index] = item;
      return [
        this.ev('response.output_text.done', {
          item_id: item.id,
          output_index: o.index,
          content_index: 0,
          text: o.text,
          logprobs: [],
        }),
        this.ev('response.content_part.done', {
          item_id: item.id,
          output_index: o.index,
          content_index: 0,
          part: textPart(o.text),
        }),
        this.ev('response.output_item.done', { output_index: o.index, item }),
      ];
    }
    const item = callItem(this.req, this.base, o.n, o.callId, o.name, o.args, st);
    this.output[o.index] = item;
    return [
      this.ev('response.function_call_arguments.done', {
        item_id: item.id,
        output_index: o.index,
        name: item.name,
        arguments: o.args,
      }),
      this.ev('response.output_item.done', { output_index: o.index, item }),
    ];
  }

  private openReasoning(): string[] {
    return this.openTextItem(
      'reasoning',
      { ...reasoningItem(this.base, ''), content: [] },
      {
        type: 'reasoning_text',
        text: '',
      },
    );
  }

  private openMessage(): string[] {
    this.hasMessage = true;
    return this.openTextItem(
      'message',
      { ...messageItem(this.base, '', 'in_progress'), content: [] },
      textPart(''),
    );
  }

  /** Closes the open item, then adds an output item with one empty content part that deltas fill. */
  private openTextItem(
    kind: 'reasoning' | 'message',
    item: { id: string; [key: string]: unknown },
    part: unknown,
  ): string[] {
    const frames = this.close();
    const index = this.output.length;
    this.output.push(item);
    this.open = { kind, index, text: '' };
    frames.push(
      this.ev('response.output_item.added', { output_index: index, item }),
      this.ev('response.content_part.added', {
        item_id: item.id,
        output_index: index,
        content_index: 0,
        part,
      }),
    );
    return frames;
  }

  chunk(chunk: ChatChunk): string[] {
    if (this.ended) return [];
    const frames = this.start(chunk);
    const u = usageOf(chunk);
    if (u) this.usage = { input: u.prompt_tokens, output: u.completion_tokens, cached: u.cached_tokens };
    const choice = chunk.choices?.[0];
    if (!choice) return frames;
    const d = choice.delta ?? {};
    const reasoning = reasoningOf(d);
    if (reasoning) {
      if (this.open?.kind !== 'reasoning') frames.push(...this.openReasoning());
      const o = this.open as OpenItem & { kind: 'reasoning' };
      o.text += reasoning;
      frames.push(
        this.ev('response.reasoning_text.delta', {
          item_id: `rs_${this.base}`,
          output_index: o.index,
          content_index: 0,
          delta: reasoning,
        }),
      );
    }
    if (d.content) {
      if (this.open?.kind !== 'message') frames.push(...this.openMessage());
      const o = this.open as OpenItem & { kind: 'message' };
      o.text += d.content;
      frames.push(
        this.ev('response.output_text.delta', {
          item_id: `msg_${this.base}`,
          output_index: o.index,
          content_index: 0,
          delta: d.content,
          logprobs: [],
        }),
      );
    }
    for (const tc of d.tool_calls ?? []) {
      const ti = tc.index ?? 0;
      if (!this.calls.has(ti) || this.open?.kind !== 'call' || this.open.n !== this.calls.get(ti)) {
        if (this.calls.has(ti)) continue; // a fragment for an already closed call: vLLM does not interleave
        const n = this.calls.size;
        this.calls.set(ti, n);
        frames.push(...this.close());
        const index = this.output.length;
        const callId = tc.id || newId('call_');
        const name = tc.function?.name ?? '';
        const item = callItem(this.req, this.base, n, callId, name, '', 'in_progress');
        this.output.push(item);
        this.open = { kind: 'call', index, n, callId, name, args: '' };
        frames.push(this.ev('response.output_item.added', { output_index: index, item }));
      }
      const o = this.open as OpenItem & { kind: 'call' };
      const args = tc.function?.arguments;
      if (args) {
        o.args += args;
        frames.push(
          this.ev('response.function_call_arguments.delta', {
            item_id: `fc_${this.base}_${o.n}`,
            output_index: o.index,
            delta: args,
          }),
        );
      }
    }
    if (choice.finish_reason) this.finish = choice.finish_reason;
    return frames;
  }

  end(): string[] {
    if (this.ended) return [];
    const frames = this.start();
    frames.push(...this.close());
    if (!this.hasMessage && this.calls.size === 0) frames.push(...this.openMessage(), ...this.close());
    this.ended = true;
    const status = this.status();
    this.final = responseObject(
      this.req,
      this.base,
      this.createdAt,
      status,
      structuredClone(this.output),
      this.usage,
    );
    frames.push(
      this.ev(status === 'completed' ? 'response.completed' : 'response.incomplete', {
        response: this.final,
      }),
    );
    return frames;
  }

  error(message: string): string[] {
    this.ended = true;
    return [this.ev('error', { code: 'server_error', message, param: null })];
  }

  /**
   * After end(): the response of its `response.completed` (or `.incomplete`) event, the one the client
   * ends with. Before it (a stream that failed or was cancelled): what the client got so far, the
   * open item with its text and arguments up to there, all `in_progress`.
   */
  assembled() {
    if (this.final) return structuredClone(this.final);
    const output = structuredClone(this.output);
    const o = this.open;
    if (o?.kind === 'reasoning') output[o.index] = reasoningItem(this.base, o.text);
    else if (o?.kind === 'message') output[o.index] = messageItem(this.base, o.text, 'in_progress');
    else if (o) output[o.index] = callItem(this.req, this.base, o.n, o.callId, o.name, o.args, 'in_progress');
    return responseObject(
      this.req,
      this.base || newId(''),
      this.createdAt,
      'in_progress',
      output,
      this.usage,
    );
  }
}
