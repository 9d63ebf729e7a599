// Chat Completions chunks → Messages events (message_start, content blocks with their deltas,
// message_delta, message_stop), and what the client was sent, assembled for the record.
import { newId, parseArguments, reasoningOf, sseFrame, usageOf } from './common';
import { messageId, stopReasonOf, usageBlock } from './messages-answer';
import type { MessagesRequest } from './messages-schema';
import type { ChatChunk, WireStream } from './types';

type Block =
  | { type: 'thinking'; thinking: string }
  | { type: 'text'; text: string }
  | { type: 'tool_use'; id: string; name: string; json: string; toolIndex: number };

export class MessagesStream implements WireStream {
  private started = false;
  private ended = false;
  private blocks: Block[] = [];
  private open = -1; // index of the open content block
  private toolBlock = new Map<number, number>(); // chat tool_calls index → block index
  private finish: string | null = null;
  private vllmStop: unknown = null;
  private inputTokens = 0;
  private outputTokens = 0;
  private cached = 0;
  private id = '';

  constructor(private req: MessagesRequest) {}

  private start(chunk?: ChatChunk): string[] {
    if (this.started) return [];
    this.started = true;
    this.id = messageId(chunk?.id);
    const ptids = chunk?.prompt_token_ids;
    if (Array.isArray(ptids)) this.inputTokens = ptids.length;
    return [
      sseFrame('message_start', {
        type: 'message_start',
        message: {
          id: this.id,
          type: 'message',
          role: 'assistant',
          model: this.req.model,
          content: [],
          stop_reason: null,
          stop_sequence: null,
          usage: usageBlock(this.inputTokens, 0, 0),
        },
      }),
      sseFrame('ping', { type: 'ping' }),
    ];
  }

  private close(): string[] {
    if (this.open < 0) return [];
    const index = this.open;
    this.open = -1;
    return [sseFrame('content_block_stop', { type: 'content_block_stop', index })];
  }

  private openBlock(b: Block): string[] {
    const frames = this.close();
    this.blocks.push(b);
    const index = this.blocks.length - 1;
    this.open = index;
    const content_block =
      b.type === 'thinking'
        ? { type: 'thinking', thinking: '', signature: '' }
        : b.type === 'text'
          ? { type: 'text', text: '' }
          : { type: 'tool_use', id: b.id, name: b.name, input: {} };
    frames.push(sseFrame('content_block_start', { type: 'content_block_start', index, content_block }));
    return frames;
  }

  private delta(index: number, delta: Record<string, unknown>): string {
    return sseFrame('content_block_delta', { type: 'content_block_delta', index, delta });
  }

  chunk(chunk: ChatChunk): string[] {
    if (this.ended) return [];
    const frames = this.start(chunk);
    const u = usageOf(chunk);
    if (u) {
      this.inputTokens = u.prompt_tokens;
      this.outputTokens = u.completion_tokens;
      this.cached = u.cached_tokens;
    }
    const choice = chunk.choices?.[0];
    if (!choice) return frames;
    const d = choice.delta ?? {};
    const reasoning = reasoningOf(d);
    if (reasoning) {
      if (this.blocks[this.open]?.type !== 'thinking')
        frames.push(...this.openBlock({ type: 'thinking', thinking: '' }));
      (this.blocks[this.open] as { thinking: string }).thinking += reasoning;
      frames.push(this.delta(this.open, { type: 'thinking_delta', thinking: reasoning }));
    }
    if (d.content) {
      if (this.blocks[this.open]?.type !== 'text') frames.push(...this.openBlock({ type: 'text', text: '' }));
      (this.blocks[this.open] as { text: string }).text += d.content;
      frames.push(this.delta(this.open, { type: 'text_delta', text: d.content }));
    }
    for (const tc of d.tool_calls ?? []) {
      const ti = tc.index ?? 0;
      let bi = this.toolBlock.get(ti);
      if (bi === undefined) {
        frames.push(
          ...this.openBlock({
            type: 'tool_use',
            id: tc.id || newId('toolu_'),
            name: tc.function?.name ?? '',
            json: '',
            toolIndex: ti,
          }),
        );
        bi = this.open;
        this.toolBlock.set(ti, bi);
      }
      const args = tc.function?.arguments;
      if (args) {
        (this.blocks[bi] as { json: string }).json += args;
        frames.push(this.delta(bi, { type: 'input_json_delta', partial_json: args }));
      }
    }
    if (choice.finish_reason) this.finish = choice.finish_reason;
    const sr = (choice as { stop_reason?: unknown }).stop_reason;
    if (sr !== undefined && sr !== null) this.vllmStop = sr;
    return frames;
  }

  private stop() {
    return stopReasonOf(
      this.finish,
      this.vllmStop,
      this.blocks.some((b) => b.type === 'tool_use'),
      this.req,
    );
  }

  end(): string[] {
    if (this.ended) return [];
    const frames = this.start();
    frames.push(...this.close());
    this.ended = true;
    frames.push(
      sseFrame('message_delta', {
        type: 'message_delta',
        delta: this.stop(),
        usage: {
          input_tokens: this.inputTokens,
          output_tokens: this.outputTokens,
          cache_creation_input_tokens: 0,
          cache_read_input_tokens: this.cached,
        },
      }),
      sseFrame('message_stop', { type: 'message_stop' }),
    );
    return frames;
  }

  error(message: string): string[] {
    this.ended = true;
    return [sseFrame('error', { type: 'error', error: { type: 'api_error', message } })];
  }

  assembled() {
    return {
      id: this.id || newId('msg_'),
      type: 'message' as const,
      role: 'assistant' as const,
      model: this.req.model,
      content: this.blocks.map((b) =>
        b.type === 'thinking'
          ? { type: 'thinking', thinking: b.thinking, signature: '' }
          : b.type === 'text'
            ? { type: 'text', text: b.text }
            : { type: 'tool_use', id: b.id, name: b.name, input: parseArguments(b.json) },
      ),
      ...this.stop(),
      usage: usageBlock(this.inputTokens, this.outputTokens, this.cached),
    };
  }
}
