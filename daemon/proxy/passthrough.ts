// Native pass-through for recording sessions: a person's own Claude Code / Codex talks to its real
// upstream (Anthropic Messages, OpenAI Responses) through the proxy with the user's key from
// <dataDir>/secrets.json. The answer is relayed as is; streams are assembled for the record, which
// is committed before the terminal event reaches the harness.
import { parseBoundedJson } from '../api/body';
import { errorText } from '../error-text';
import { type BackendResponse, readText, SendError, send, sendWhole, timedOut, WholeResponse } from '../http';
import type { NewLlmCall } from '../protocol/entities';
import type { Call } from './call';
import { backendErrorMessage, ProxyError } from './errors';
import type { Json } from './json';
import { parseBackendJson } from './json';
import { AS_REQUESTED, callSampling } from './sampling';
import { SseParser } from './sse';

export type NativeShape = 'messages' | 'responses' | 'json';

export interface PassOptions {
  url: string;
  method?: 'GET' | 'POST';
  headers: Record<string, string>;
  body?: Json;
  stream: boolean;
  shape: NativeShape;
  backendName: string;
  /** Record the call (false for listing models). */
  record: boolean;
}

/** Usage and finish reason of a native Messages / Responses answer. */
function summaryOf(shape: NativeShape, json: Json | null): Partial<NewLlmCall> {
  if (!json || typeof json !== 'object') return {};
  const u = json.usage;
  if (shape === 'messages') {
    return {
      finish_reason: json.stop_reason ?? null,
      usage: u
        ? {
            prompt_tokens:
              Number(u.input_tokens ?? 0) +
              Number(u.cache_read_input_tokens ?? 0) +
              Number(u.cache_creation_input_tokens ?? 0),
            completion_tokens: Number(u.output_tokens ?? 0),
          }
        : null,
    };
  }
  if (shape === 'responses') {
    return {
      finish_reason: json.status ?? null,
      usage: u
        ? { prompt_tokens: Number(u.input_tokens ?? 0), completion_tokens: Number(u.output_tokens ?? 0) }
        : null,
    };
  }
  return {};
}

/** Folds an Anthropic Messages event stream into the Message a non-streaming request returns. */
class MessagesAssembler {
  message: Json | null = null;
  private json: string[] = [];
  push(type: string, data: Json): void {
    if (type === 'message_start' && data.message) {
      this.message = { ...data.message, content: [...(data.message.content ?? [])] };
      return;
    }
    const m = this.message;
    if (!m) return;
    if (type === 'content_block_start') {
      m.content[data.index] = { ...data.content_block };
      this.json[data.index] = '';
    } else if (type === 'content_block_delta') {
      const b = m.content[data.index];
      const d = data.delta ?? {};
      if (!b) return;
      if (d.type === 'text_delta') b.text = (b.text ?? '') + d.text;
      else if (d.type === 'input_json_delta')
        this.json[data.index] = (this.json[data.index] ?? '') + d.partial_json;
      else if (d.type === 'thinking_delta') b.thinking = (b.thinking ?? '') + d.thinking;
      else if (d.type === 'signature_delta') b.signature = d.signature;
    } else if (type === 'content_block_stop') {
      const b = m.content[data.index];
      const j = this.json[data.index];
      if (b && j) {
        try {
          b.input = parseBoundedJson(j);
        } catch {
          b.input = j;
        }
      }
    } else if (type === 'message_delta') {
      Object.assign(m, data.delta ?? {});
      if (data.usage) m.usage = { ...(m.usage ?? {}), ...data.usage };
    }
  }
}

const TERMINAL = new Set(['message_stop', 'response.completed', 'response.failed', 'response.incomplete']);

function frame(event: string | null, data: string): string {
  const lines = data
    .split('\n')
    .map((l) => `data: ${l}`)
    .join('\n');
  return event ? `event: ${event}\n${lines}\n\n` : `${lines}\n\n`;
}

/** Relays one call to a native upstream and records it. Never throws. */
export async function passthrough(call: Call, o: PassOptions): Promise<void> {
  call.stream = o.stream;
  if (!o.record) call.unrecorded();
  const base: Partial<NewLlmCall> = {
    backend_request: o.body ?? null,
    model: typeof o.body?.model === 'string' ? o.body.model : null,
    backend: o.backendName,
    token_source: 'text',
    sampling: o.shape === 'json' ? null : callSampling(o.body ?? {}, AS_REQUESTED),
  };
  call.snapshot = () => base;
  call.onClientClose(() => {
    call.cancel(call.snapshot?.() ?? base);
  });
  const payload = o.body === undefined ? undefined : JSON.stringify(o.body);
  const queueMs = call.elapsed();
  let res: BackendResponse | WholeResponse;
  try {
    // A call that did not ask to stream is read whole (relayed as it came), whatever the upstream sends.
    res = await (o.stream ? send : sendWhole)(o.url, {
      method: o.method ?? 'POST',
      body: payload,
      headers: o.headers,
      timeoutMs: call.ctx.config.backend_timeout_ms,
      onRequest: (abort) => call.setAbort(abort),
    });
  } catch (e) {
    if (e instanceof SendError && e.kind === 'aborted') return;
    const err =
      e instanceof SendError && e.kind === 'timeout'
        ? new ProxyError(504, `upstream ${o.backendName} timed out`, null, 'backend_timeout')
        : new ProxyError(502, `upstream ${o.backendName} failed: ${errorText(e)}`);
    await call.fail(err, { ...base, queue_ms: queueMs });
    return;
  }
  base.queue_ms = queueMs;
  const ctype = String(res.headers['content-type'] ?? 'application/json');
  if (!o.stream || res instanceof WholeResponse || !ctype.includes('text/event-stream'))
    await relayJson(call, o, res, base, ctype);
  else await relayStream(call, o, res, base, ctype);
}

/** A whole answer (JSON, or any answer to a call that did not ask to stream): recorded, then released. */
async function relayJson(
  call: Call,
  o: PassOptions,
  res: BackendResponse | WholeResponse,
  base: Partial<NewLlmCall>,
  ctype: string,
): Promise<void> {
  const status = res.statusCode ?? 502;
  let text: string;
  try {
    text = await readText(res);
  } catch (e) {
    if (call.settled) return;
    await call.fail(new ProxyError(502, `upstream ${o.backendName} failed mid-response: ${String(e)}`), base);
    return;
  }
  if (call.settled) return;
  const json = parseBackendJson(text);
  // As from a backend (pipeline.ts): the harness asked for events and its client cannot read a
  // JSON answer there (an error status stays as the upstream gave it: clients read those as JSON).
  if (o.stream && status < 400) {
    await call.fail(
      new ProxyError(
        502,
        `upstream ${o.backendName} answered ${ctype} instead of an event stream to a streamed request: ${text.slice(0, 200)}`,
        null,
        'backend_not_streamed',
      ),
      { ...base, response: json ?? text.slice(0, 10_000) },
    );
    return;
  }
  const total = call.elapsed();
  await call.answer(status, { 'content-type': ctype }, text, {
    ...base,
    ...summaryOf(o.shape, json),
    response: json ?? text.slice(0, 10_000),
    status: status < 400 ? 'ok' : 'error',
    error: status < 400 ? null : `upstream answered ${status}: ${backendErrorMessage(text)}`,
    http_status: status,
    ttft_ms: total,
    total_ms: total,
  });
}

/**
 * What a pass-through stream has sent so far, folded into the Message or Response it builds; when its
 * first event came, and the terminal events held back until the record is committed.
 */
class StreamRecord {
  private readonly messages = new MessagesAssembler();
  private final: Json | null = null;
  private readonly parser = new SseParser();
  ttft: number | null = null;
  readonly held: string[] = [];
  constructor(private readonly shape: NativeShape) {}

  /** Relays the events in `buf` to the harness as they come (`res` paused while it is not reading). */
  relay(buf: Buffer, call: Call, res: BackendResponse): void {
    for (const ev of this.parser.push(buf)) {
      const data = ev.data === '[DONE]' ? null : parseBackendJson(ev.data);
      const type = ev.event ?? (typeof data?.type === 'string' ? data.type : null);
      if (this.ttft === null) this.ttft = call.elapsed();
      if (data && type) this.push(type, data);
      const f = frame(ev.event, ev.data);
      if ((type && TERMINAL.has(type)) || ev.data === '[DONE]') this.held.push(f);
      else if (!call.write(f)) {
        res.pause();
        call.res.once('drain', () => res.resume());
      }
    }
  }

  private push(type: string, data: Json): void {
    if (this.shape === 'messages') this.messages.push(type, data);
    else if (this.shape === 'responses' && data.response) this.final = data.response;
  }
  get response(): Json | null {
    return this.shape === 'messages' ? this.messages.message : this.final;
  }
}

/**
 * An event stream: relayed as it comes, folded for the record, the terminal event held back until the
 * record is committed.
 */
async function relayStream(
  call: Call,
  o: PassOptions,
  res: BackendResponse,
  base: Partial<NewLlmCall>,
  ctype: string,
): Promise<void> {
  const status = res.statusCode ?? 502;
  const raw = call.res;
  call.openStream(status, { 'content-type': ctype, 'cache-control': 'no-cache', connection: 'keep-alive' });
  const record = new StreamRecord(o.shape);
  const partial = (): Partial<NewLlmCall> => {
    const response = record.response;
    return { ...base, ...summaryOf(o.shape, response), response, ttft_ms: record.ttft, http_status: status };
  };
  call.snapshot = partial;
  let deadline: NodeJS.Timeout | undefined;
  await new Promise<void>((resolve) => {
    call.onClientClose(() => {
      clearTimeout(deadline);
      resolve();
    });
    const finish = (status: 'ok' | 'error', error: string | null) => {
      clearTimeout(deadline);
      if (call.settled) return resolve();
      call
        .complete(
          () => ({ ...partial(), status, error, total_ms: call.elapsed() }),
          (problem) => {
            if (problem !== null)
              call.ctx.log('proxy: recording a pass-through stream failed', { error: problem });
            return record.held.join('');
          },
          status === 'error',
        )
        .catch((e) => {
          call.ctx.log('proxy: finishing a pass-through stream failed', { error: String(e) });
          if (!raw.destroyed) raw.destroy();
        })
        .finally(resolve);
    };
    res.on('data', (buf: Buffer) => {
      try {
        if (!call.settled) record.relay(buf, call, res);
      } catch (e) {
        finish('error', `proxy error while relaying the stream: ${errorText(e)}`);
      }
    });
    res.on('end', () =>
      finish(status < 400 ? 'ok' : 'error', status < 400 ? null : `upstream answered ${status}`),
    );
    // Like a backend's stream (stream.ts): keep-alive events do not hold a call past its deadline.
    const limit = call.ctx.config.call_deadline_ms;
    deadline = setTimeout(
      () =>
        finish('error', `the call passed its deadline of ${limit} ms (daemon.call_deadline_ms) mid-stream`),
      Math.max(0, limit - call.elapsed()),
    );
    res.on('close', () => {
      if (res.complete) return;
      finish(
        'error',
        timedOut.has(res) ? `upstream ${o.backendName} went silent (timeout)` : 'upstream closed the stream',
      );
    });
  });
}
