// One proxied call's state and its endings: answer, fail, cancel, or a stream opened and completed.
// Each ending is claimed once (a second is refused) and writes the record before the last byte.
import type { OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { DaemonContext } from '../context';
import type { NewLlmCall, WireApi } from '../protocol/entities';
import { redactText } from '../redact';
import { JsonText } from '../store/json-text';
import { type ErrorWire, errorBody, ProxyError } from './errors';
import { sendJson } from './front';
import type { Output } from './output';
import type { Recorder } from './recorder';
import type { Scope } from './scope';

export interface CallInit {
  ctx: DaemonContext;
  recorder: Recorder;
  res: ServerResponse;
  wire: WireApi;
  errorWire: ErrorWire;
  scope: Scope | null;
  /** The request as the harness sent it, and its JSON text when known (for cheap redaction). */
  request: unknown;
  raw?: string;
  t0: number;
  tags: string[];
}

/**
 * The per-call state shared by the pipeline, the native pass-through and the error paths. Its life
 * ends once, by one of its verbs: `answer` (a whole answer), `fail` (an error answer), `cancel` (the
 * harness went away) or `complete` (the end of a stream `openStream` began). Each verb records the
 * call before the harness gets the last byte; a second ending is refused.
 */
export class Call {
  readonly ctx: DaemonContext;
  readonly recorder: Recorder;
  /** The harness's response. */
  readonly res: ServerResponse;
  readonly wire: WireApi;
  readonly errorWire: ErrorWire;
  scope: Scope | null;
  readonly t0: number;
  readonly tags: string[];
  stream = false;
  private ended = false;
  private recorded = false;
  private abortFn: (() => void) | null = null;
  private readonly request: unknown;
  private readonly raw: string | undefined;
  private closeHandlers: (() => void)[] = [];
  /**
   * With n > 1: each choice's token fields (tagged `choice:<i>`). The call is then stored as one
   * llm_call record per choice (same request and response), all in one transaction.
   */
  choices: Partial<NewLlmCall>[] | null = null;
  /** What is known so far (backend, partial tokens), for the record of a cancelled call. */
  snapshot: (() => Partial<NewLlmCall>) | null = null;

  constructor(init: CallInit) {
    this.ctx = init.ctx;
    this.recorder = init.recorder;
    this.res = init.res;
    this.wire = init.wire;
    this.errorWire = init.errorWire;
    this.scope = init.scope;
    this.request = init.request;
    this.raw = init.raw;
    this.t0 = init.t0;
    this.tags = init.tags;
    const res = init.res;
    res.on('close', () => {
      if (res.writableFinished) return;
      for (const h of this.closeHandlers) h();
    });
  }

  /** Whether the call has ended (answered, failed, cancelled or completed). */
  get settled(): boolean {
    return this.ended;
  }

  /** Claims the call's one ending; false when it already has one. */
  private settle(): boolean {
    if (this.ended) return false;
    this.ended = true;
    return true;
  }

  /** The call is not recorded, whatever its ending (count_tokens of a rollout: no turn of its trajectory). */
  unrecorded(): void {
    this.recorded = true;
  }

  elapsed(): number {
    return Math.round((performance.now() - this.t0) * 1000) / 1000;
  }

  /** Runs when the harness goes away before the response is complete. */
  onClientClose(handler: () => void): void {
    this.closeHandlers.push(handler);
  }

  setAbort(fn: (() => void) | null): void {
    this.abortFn = fn;
  }

  abortBackend(): void {
    const fn = this.abortFn;
    this.abortFn = null;
    fn?.();
  }

  /** Stores the call (once); a rollout-less call (refused before a scope was known) stores nothing. */
  private async record(fields: Partial<NewLlmCall>): Promise<void> {
    if (!this.scope || this.recorded) return;
    this.recorded = true;
    const s = this.scope;
    const call: NewLlmCall = {
      rollout_id: s.rolloutId,
      attempt_id: s.attemptId,
      recording_id: s.recording?.id ?? null,
      wire_api: this.wire,
      stream: this.stream,
      request: this.request ?? null,
      backend_request: null,
      response: null,
      prompt_ids: null,
      response_ids: null,
      response_logprobs: null,
      token_source: 'text',
      bridge: null,
      sampling: null,
      finish_reason: null,
      usage: null,
      model: null,
      model_version: null,
      backend: null,
      status: 'ok',
      error: null,
      http_status: null,
      tags: this.tags,
      queue_ms: null,
      ttft_ms: null,
      total_ms: this.elapsed(),
      ...fields,
    };
    // The request is stored as the harness sent it (its text, not re-serialised); the store redacts
    // every field (../redact.ts).
    if (this.raw !== undefined && call.request === this.request && this.request != null)
      call.request = new JsonText(this.raw, this.request);
    const choices = this.choices;
    this.ctx.telemetry?.onCall(call);
    if (choices && choices.length > 1)
      await this.recorder.recordAll(
        choices.map((c) => ({ ...call, ...c, tags: [...call.tags, ...(c.tags ?? [])] })),
      );
    else await this.recorder.record(call);
  }

  /**
   * Records the call and answers `body` whole; false when the call had ended. When the record cannot
   * be stored the harness gets a 500 instead (in `output`'s wire format when given).
   */
  async answer(
    status: number,
    headers: OutgoingHttpHeaders,
    body: string,
    fields: Partial<NewLlmCall>,
    output?: Output,
  ): Promise<boolean> {
    if (!this.settle()) return false;
    try {
      await this.record(fields);
    } catch (e) {
      await this.reply(new ProxyError(500, `the call could not be recorded: ${String(e)}`), {}, output);
      return true;
    }
    // Not `{...headers, 'content-length': n}`: V8 (Node 20) builds that literal through runtime calls
    // (~0.6 µs here, against ~0.1 copied and set).
    const head = Object.assign({}, headers);
    head['content-length'] = Buffer.byteLength(body);
    this.res.writeHead(status, head);
    this.res.end(body);
    return true;
  }

  /** Records a failed call and answers the harness with an error in its wire format (once). */
  async fail(err: ProxyError, fields: Partial<NewLlmCall> = {}, output?: Output): Promise<boolean> {
    if (!this.settle()) return false;
    await this.reply(err, fields, output);
    return true;
  }

  /** The harness went away: stops the backend and records the call as cancelled with `fields` (once). */
  cancel(fields: Partial<NewLlmCall>): boolean {
    if (!this.settle()) return false;
    this.abortBackend();
    this.record({
      ...fields,
      status: 'cancelled',
      error: 'the client closed the connection',
      http_status: 499,
    }).catch((e) => this.ctx.log('proxy: recording a cancelled call failed', { error: String(e) }));
    return true;
  }

  /** Starts a streamed answer; `complete` ends it. */
  openStream(status: number, headers: OutgoingHttpHeaders): void {
    this.res.writeHead(status, headers);
  }

  /** Writes a part of the open stream; false when the harness is not reading yet (wait for 'drain'). */
  write(text: string): boolean {
    return this.res.write(text);
  }

  /**
   * Ends the open stream (once; false when the call had ended): with `abort` stops the backend first,
   * records `fields()`, then writes `last(problem)` and ends the response, `problem` being why the
   * record could not be stored (null when it was).
   */
  async complete(
    fields: () => Partial<NewLlmCall>,
    last: (problem: string | null) => string,
    abort = false,
  ): Promise<boolean> {
    if (!this.settle()) return false;
    if (abort) this.abortBackend();
    let problem: string | null = null;
    try {
      await this.record(fields());
    } catch (e) {
      problem = String(e);
    }
    const tail = last(problem);
    if (!this.res.destroyed) this.res.end(tail);
    return true;
  }

  /** Records a failed call and writes the error answer (or cuts a response already begun). */
  private async reply(err: ProxyError, fields: Partial<NewLlmCall>, output?: Output): Promise<void> {
    try {
      await this.record({ status: 'error', error: err.message, http_status: err.status, ...fields });
    } catch (e) {
      this.ctx.log('proxy: recording a failed call failed', { error: String(e) });
    }
    const body = output
      ? output.error(err.status, redactText(err.message), err.param, err.code)
      : errorBody(this.errorWire, err);
    if (this.res.headersSent || this.res.writableEnded) {
      this.res.destroy();
      return;
    }
    sendJson(
      this.res,
      err.status,
      JSON.stringify(body),
      err.retryAfterS !== null ? { 'retry-after': String(err.retryAfterS) } : {},
    );
  }
}
