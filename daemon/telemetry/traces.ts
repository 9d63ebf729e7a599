// OTLP span export: a rollout is a trace (its attempts, LLM calls and reported tool runs are child
// spans, per the GenAI semantic conventions), a training step is a span of its own. Batched with a
// bounded queue: export never waits on the proxy's path, and spans that find the queue full are
// dropped and counted.
import { createRequire } from 'node:module';
import type { Attributes, Context, Span } from '@opentelemetry/api';
import type {
  BasicTracerProvider,
  BatchSpanProcessor,
  ReadableSpan,
  SpanExporter,
  SpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import type { NewLlmCall, Rollout, RunMetrics, ToolRun } from '../protocol/entities';
import type { DaemonEvent } from '../protocol/events';
import { redactText } from '../redact';
import { plainValue } from '../store/json-text';
import { prefixBreakOf } from './metrics';

const load = createRequire(import.meta.url);
/**
 * The SDK, its exporters and the API, loaded when export is turned on (~15 MB a daemon without it
 * never holds): required, not imported, so that no bundle loads them at start.
 */
const sdk = () => {
  return {
    base: load('@opentelemetry/sdk-trace-base') as typeof import('@opentelemetry/sdk-trace-base'),
    resources: load('@opentelemetry/resources') as typeof import('@opentelemetry/resources'),
    json: () =>
      load(
        '@opentelemetry/exporter-trace-otlp-http',
      ) as typeof import('@opentelemetry/exporter-trace-otlp-http'),
    proto: () =>
      load(
        '@opentelemetry/exporter-trace-otlp-proto',
      ) as typeof import('@opentelemetry/exporter-trace-otlp-proto'),
  };
};

let otelApi: typeof import('@opentelemetry/api') | null = null;
/** @opentelemetry/api (77 modules), required by the first SpanExport. */
const otel = () => {
  otelApi ??= load('@opentelemetry/api') as typeof import('@opentelemetry/api');
  return otelApi;
};

export interface OtlpOptions {
  /** Full traces URL (…/v1/traces); undefined: the exporter reads OTEL_EXPORTER_OTLP_* itself. */
  endpoint?: string;
  headers?: Record<string, string>;
  protocol: 'http/protobuf' | 'http/json';
  /** Export message content (redacted) as gen_ai.input.messages / gen_ai.output.messages. */
  content: boolean;
  maxQueue: number;
  /** How often a batch leaves (ms). */
  delayMs: number;
  version: string;
}

/** Content attributes are cut at this many characters (a backend refuses huge spans). */
const MAX_CONTENT_CHARS = 64 * 1024;
/** Open rollout spans kept at most; past it new rollouts are not traced (and counted as dropped). */
const MAX_OPEN_ROLLOUTS = 20_000;
const TERMINAL = new Set(['succeeded', 'failed', 'cancelled']);

interface OpenRollout {
  span: Span;
  ctx: Context;
  attempt: { span: Span; ctx: Context; index: number } | null;
}

/** Counts what leaves and drops spans that would overfill the queue (the SDK would drop them silently). */
class BoundedProcessor implements SpanProcessor {
  queued = 0;
  dropped = 0;
  exported = 0;
  failed = 0;
  private readonly batch: BatchSpanProcessor;

  constructor(exporter: SpanExporter, maxQueue: number, delayMs: number) {
    const counted: SpanExporter = {
      export: (spans, done) =>
        exporter.export(spans, (result) => {
          this.queued -= spans.length;
          if (result.code === 0) this.exported += spans.length;
          else this.failed += spans.length;
          done(result);
        }),
      shutdown: () => exporter.shutdown(),
      forceFlush: () => exporter.forceFlush?.() ?? Promise.resolve(),
    };
    // The SDK's own queue is one batch larger than ours, so it never drops a span we let through.
    this.batch = new (sdk().base.BatchSpanProcessor)(counted, {
      maxQueueSize: maxQueue + 512,
      maxExportBatchSize: 512,
      scheduledDelayMillis: delayMs,
    });
    this.max = maxQueue;
  }
  private readonly max: number;

  onStart(): void {}
  onEnd(span: ReadableSpan): void {
    if (this.queued >= this.max) {
      this.dropped++;
      return;
    }
    this.queued++;
    this.batch.onEnd(span);
  }
  forceFlush(): Promise<void> {
    return this.batch.forceFlush();
  }
  shutdown(): Promise<void> {
    return this.batch.shutdown();
  }
}

export class SpanExport {
  private readonly provider: BasicTracerProvider;
  private readonly processor: BoundedProcessor;
  private readonly tracer;
  private readonly rollouts = new Map<string, OpenRollout>();
  private readonly lastStepAt = new Map<string, number>();

  constructor(private readonly options: OtlpOptions) {
    const config = { url: options.endpoint, headers: options.headers };
    const { base, resources, json, proto } = sdk();
    const exporter =
      options.protocol === 'http/json'
        ? new (json().OTLPTraceExporter)(config)
        : new (proto().OTLPTraceExporter)(config);
    this.processor = new BoundedProcessor(exporter, options.maxQueue, options.delayMs);
    this.provider = new base.BasicTracerProvider({
      resource: resources.resourceFromAttributes({
        'service.name': 'harness-rl',
        'service.version': options.version,
      }),
      spanProcessors: [this.processor],
    });
    this.tracer = this.provider.getTracer('harness-rl', options.version);
  }

  stats(): { queued: number; dropped: number; exported: number; failed: number } {
    const p = this.processor;
    return { queued: p.queued, dropped: p.dropped, exported: p.exported, failed: p.failed };
  }

  /** Store events: rollouts open and close their traces, attempts their spans, run metrics a step span. */
  onEvent(e: DaemonEvent): void {
    // Calls recorded before this event belong under the spans it may close.
    this.drain();
    if (e.type === 'rollout') this.onRollout(e.rollout);
    else if (e.type === 'run_metrics') this.onStep(e.metrics);
    else if (e.type === 'tool_runs') for (const t of e.tool_runs) this.toolSpan(t);
  }

  /**
   * A tool run the harness reported (ingest.ts): an `execute_tool` span (GenAI conventions) beside the
   * calls of its rollout's trace, while that trace is open (a report after the rollout ended opens none).
   */
  private toolSpan(t: ToolRun): void {
    const parent = this.rollouts.get(t.rollout_id);
    if (!parent) return;
    const start = Date.parse(t.started_at);
    const attrs: Attributes = {
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.name': t.tool,
      'harness_rl.rollout.id': t.rollout_id,
      'harness_rl.tool_run.source': t.source,
    };
    if (t.call_id) attrs['gen_ai.tool.call.id'] = t.call_id;
    if (t.result_bytes !== null) attrs['harness_rl.tool_run.result_bytes'] = t.result_bytes;
    if (t.agent) attrs['harness_rl.tool_run.agent'] = t.agent;
    const span = this.tracer.startSpan(
      `execute_tool ${t.tool}`,
      { kind: otel().SpanKind.INTERNAL, startTime: start, attributes: attrs },
      parent.attempt?.ctx ?? parent.ctx,
    );
    if (t.success === false)
      span.setStatus({ code: otel().SpanStatusCode.ERROR, message: t.error ?? 'failed' });
    span.end(start + (t.duration_ms ?? 0));
  }

  /**
   * One recorded LLM call, on the proxy's path: kept (bounded by the queue) and made into a span on the
   * next turn of the event loop, so the call pays a push, not the SDK's span creation.
   */
  onCall(c: NewLlmCall): void {
    if (this.pending.length + this.processor.queued >= this.options.maxQueue) {
      this.processor.dropped++;
      return;
    }
    this.pending.push({ call: c, end: Date.now() });
    if (this.pending.length === 1) setImmediate(this.drainSoon);
  }

  private readonly pending: { call: NewLlmCall; end: number }[] = [];
  private readonly drainSoon = () => this.drain();

  private drain(): void {
    for (const { call, end } of this.pending.splice(0)) this.callSpan(call, end);
  }

  /** A CLIENT span under the rollout's current attempt, timed from total_ms. */
  private callSpan(c: NewLlmCall, end: number): void {
    const start = end - (c.total_ms ?? 0);
    const parent = c.rollout_id ? this.openRollout(c.rollout_id, start) : null;
    const model = requestModel(c.request) ?? c.model ?? 'unknown';
    const op = operationOf(c.wire_api);
    const attrs: Attributes = {
      'gen_ai.operation.name': op,
      'gen_ai.provider.name': 'harness-rl',
      'gen_ai.request.model': model,
      'harness_rl.wire_api': c.wire_api,
      'harness_rl.token_source': c.token_source,
      'harness_rl.stream': c.stream,
    };
    if (c.model) attrs['gen_ai.response.model'] = c.model;
    if (c.usage) {
      attrs['gen_ai.usage.input_tokens'] = c.usage.prompt_tokens;
      attrs['gen_ai.usage.output_tokens'] = c.usage.completion_tokens;
    }
    if (c.finish_reason) attrs['gen_ai.response.finish_reasons'] = [c.finish_reason];
    const s = c.sampling as
      | { temperature?: unknown; top_p?: unknown; max_tokens?: unknown }
      | null
      | undefined;
    if (typeof s?.temperature === 'number') attrs['gen_ai.request.temperature'] = s.temperature;
    if (typeof s?.top_p === 'number') attrs['gen_ai.request.top_p'] = s.top_p;
    if (typeof s?.max_tokens === 'number') attrs['gen_ai.request.max_tokens'] = s.max_tokens;
    if (c.rollout_id) attrs['harness_rl.rollout.id'] = c.rollout_id;
    if (c.attempt_id) attrs['harness_rl.attempt.id'] = c.attempt_id;
    if (c.recording_id) attrs['harness_rl.recording.id'] = c.recording_id;
    if (c.model_version != null) attrs['harness_rl.model_version'] = c.model_version;
    if (c.backend) attrs['harness_rl.backend'] = c.backend;
    if (c.queue_ms != null) attrs['harness_rl.queue_ms'] = c.queue_ms;
    if (c.ttft_ms != null) attrs['harness_rl.ttft_ms'] = c.ttft_ms;
    const broke = prefixBreakOf(c);
    attrs['harness_rl.prefix_break'] = broke !== null;
    if (broke) attrs['harness_rl.prefix_break.kind'] = broke;
    const fallback = (c.bridge as { fallback?: unknown } | null)?.fallback;
    if (typeof fallback === 'string') attrs['harness_rl.bridge.fallback'] = redactText(fallback);
    if (this.options.content) {
      attrs['gen_ai.input.messages'] = contentOf(c.request);
      if (c.response != null) attrs['gen_ai.output.messages'] = contentOf(c.response);
    }
    if (c.status !== 'ok') attrs['error.type'] = c.http_status != null ? String(c.http_status) : c.status;
    const span = this.tracer.startSpan(
      `${op} ${model}`,
      { kind: otel().SpanKind.CLIENT, startTime: start, attributes: attrs },
      parent ? (parent.attempt?.ctx ?? parent.ctx) : otel().context.active(),
    );
    if (c.status !== 'ok')
      span.setStatus({ code: otel().SpanStatusCode.ERROR, message: redactText(c.error ?? c.status) });
    span.end(end);
  }

  async close(): Promise<void> {
    this.drain();
    for (const [id, r] of this.rollouts) {
      r.attempt?.span.end();
      r.span.setAttribute('harness_rl.rollout.open_at_shutdown', true);
      r.span.end();
      this.rollouts.delete(id);
    }
    // A receiver that refuses the last batches fails the shutdown: those spans are counted as failed.
    await this.provider.shutdown().catch(() => undefined);
  }

  async flush(): Promise<void> {
    this.drain();
    await this.provider.forceFlush();
  }

  private openRollout(id: string, start: number, r?: Rollout): OpenRollout | null {
    const open = this.rollouts.get(id);
    if (open) return open;
    if (this.rollouts.size >= MAX_OPEN_ROLLOUTS) {
      this.processor.dropped++;
      return null;
    }
    const span = this.tracer.startSpan(`rollout ${id}`, {
      root: true,
      startTime: r ? Date.parse(r.created_at) : start,
      attributes: { 'harness_rl.rollout.id': id },
    });
    const entry: OpenRollout = {
      span,
      ctx: otel().trace.setSpan(otel().context.active(), span),
      attempt: null,
    };
    this.rollouts.set(id, entry);
    return entry;
  }

  private onRollout(r: Rollout): void {
    const terminal = TERMINAL.has(r.status);
    const open = this.openRollout(r.id, Date.now(), r);
    if (!open) return;
    open.span.setAttributes(rolloutAttributes(r));
    if (open.attempt && (terminal || r.attempt_count > open.attempt.index)) {
      open.attempt.span.setAttribute('harness_rl.attempt.status', terminal ? r.status : 'retried');
      if (r.status === 'failed') open.attempt.span.setStatus({ code: otel().SpanStatusCode.ERROR });
      open.attempt.span.end();
      open.attempt = null;
    }
    if (!terminal && r.status === 'running' && r.attempt_count > 0 && !open.attempt) {
      const span = this.tracer.startSpan(
        `attempt ${r.attempt_count}`,
        { attributes: { 'harness_rl.rollout.id': r.id, 'harness_rl.attempt.index': r.attempt_count } },
        open.ctx,
      );
      open.attempt = { span, ctx: otel().trace.setSpan(open.ctx, span), index: r.attempt_count };
    }
    if (terminal) {
      if (r.status === 'failed')
        open.span.setStatus({ code: otel().SpanStatusCode.ERROR, message: redactText(r.error ?? 'failed') });
      open.span.end(r.finished_at ? Date.parse(r.finished_at) : undefined);
      this.rollouts.delete(r.id);
    }
  }

  private onStep(m: RunMetrics): void {
    const end = Date.parse(m.created_at) || Date.now();
    const start = this.lastStepAt.get(m.run_id) ?? end;
    this.lastStepAt.set(m.run_id, end);
    const attrs: Attributes = { 'harness_rl.run.id': m.run_id, 'harness_rl.step': m.step };
    for (const [k, v] of Object.entries(m.metrics)) if (v != null) attrs[`harness_rl.metric.${k}`] = v;
    this.tracer
      .startSpan(`training step ${m.step}`, { root: true, startTime: start, attributes: attrs })
      .end(end);
  }
}

function rolloutAttributes(r: Rollout): Attributes {
  const a: Attributes = {
    'harness_rl.rollout.kind': r.kind,
    'harness_rl.rollout.status': r.status,
    'harness_rl.rollout.attempts': r.attempt_count,
  };
  if (r.run_id) a['harness_rl.run.id'] = r.run_id;
  if (r.group_id) a['harness_rl.group.id'] = r.group_id;
  if (r.task_id) a['harness_rl.task.id'] = r.task_id;
  if (r.recording_id) a['harness_rl.recording.id'] = r.recording_id;
  if (r.reward != null) a['harness_rl.reward'] = r.reward;
  if (r.stats) a['harness_rl.prefix_breaks'] = r.stats.prefix_breaks;
  return a;
}

/** gen_ai.operation.name per wire API (GenAI semantic conventions' well-known values). */
function operationOf(wire: NewLlmCall['wire_api']): string {
  if (wire === 'completions') return 'text_completion';
  if (wire === 'gemini') return 'generate_content';
  return 'chat';
}

function requestModel(request: unknown): string | null {
  const m = (plainValue(request) as { model?: unknown } | null)?.model;
  return typeof m === 'string' ? m : null;
}

function contentOf(v: unknown): string {
  const text = redactText(JSON.stringify(plainValue(v)) ?? 'null');
  return text.length > MAX_CONTENT_CHARS ? `${text.slice(0, MAX_CONTENT_CHARS)}…` : text;
}
