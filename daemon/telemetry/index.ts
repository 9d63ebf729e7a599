// Telemetry: GET /metrics (Prometheus, the daemon token required) and OTLP span export, both fed by
// each recorded LLM call (Call.record) and the store's events; and the OTLP receiver (ingest.ts) that
// puts a harness's own tool runs on its rollout.
import type { FastifyInstance } from 'fastify';
import { bearerToken, sameSecret } from '../api/auth';
import { ApiError, errorBody } from '../api/errors';
import { VERSION } from '../config/version';
import type { DaemonContext } from '../context';
import type { OtlpConfig } from '../protocol/config';
import type { NewLlmCall } from '../protocol/entities';
import { registerIngest } from './ingest';
import { DaemonMetrics } from './metrics';
import { type OtlpOptions, SpanExport } from './traces';

export interface Telemetry {
  metrics: DaemonMetrics | null;
  spans: SpanExport | null;
  close(): Promise<void>;
}

type Env = Record<string, string | undefined>;

/** The export settings from the config, over the standard OTEL_EXPORTER_OTLP_* variables; null: export off. */
export function otlpOptions(config: OtlpConfig | undefined, env: Env = process.env): OtlpOptions | null {
  if (env.OTEL_SDK_DISABLED === 'true' || env.OTEL_TRACES_EXPORTER === 'none') return null;
  const fromEnv = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || env.OTEL_EXPORTER_OTLP_ENDPOINT;
  if (!config?.endpoint && !fromEnv) return null;
  const protocol =
    config?.protocol ?? env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? env.OTEL_EXPORTER_OTLP_PROTOCOL;
  return {
    endpoint: config?.endpoint,
    headers: config?.headers,
    protocol: protocol === 'http/json' ? 'http/json' : 'http/protobuf',
    content: config?.content ?? false,
    maxQueue: config?.max_queue ?? 4096,
    delayMs: config?.delay_ms ?? 2000,
    version: VERSION,
  };
}

export function registerTelemetry(
  app: FastifyInstance,
  ctx: DaemonContext,
  recorderDepth: () => number,
): Telemetry {
  registerIngest(app, ctx);
  const options = otlpOptions(ctx.config.otlp);
  const spans = options ? new SpanExport(options) : null;
  const metrics = ctx.config.metrics
    ? new DaemonMetrics({
        store: ctx.store,
        recorderQueue: recorderDepth,
        spans: () => spans?.stats() ?? null,
        log: ctx.log,
      })
    : null;
  const unsubscribe =
    spans || metrics
      ? ctx.store.subscribe(
          (e) => {
            spans?.onEvent(e);
            if (e.type === 'tool_runs') metrics?.observeToolRuns(e.tool_runs);
          },
          spans ? ['rollout', 'run_metrics', 'tool_runs'] : ['tool_runs'],
        )
      : null;
  if (spans) ctx.log('exporting spans over OTLP', { protocol: options?.protocol, content: options?.content });
  if (metrics || spans) {
    ctx.telemetry = {
      onCall(call: NewLlmCall) {
        try {
          metrics?.observeCall(call);
          spans?.onCall(call);
        } catch (err) {
          ctx.log('telemetry: a call was not counted', { error: String(err) });
        }
      },
    };
  }
  // Prometheus scrapes with `authorization: {credentials_file: <data>/token}`: the same token as the API.
  app.get('/metrics', async (req, reply) => {
    const token = bearerToken(req.headers);
    if (!token || !sameSecret(token, ctx.token)) {
      const e = new ApiError(
        401,
        'unauthorized',
        'send Authorization: Bearer <daemon token>',
        'authorization',
      );
      return reply.code(401).send(errorBody(e));
    }
    if (!metrics) {
      const e = new ApiError(404, 'not_found', 'metrics are off (daemon.metrics: false)');
      return reply.code(404).send(errorBody(e));
    }
    const text = await metrics.text();
    return reply.code(200).header('content-type', metrics.contentType).send(text);
  });
  return {
    metrics,
    spans,
    close: async () => {
      unsubscribe?.();
      await spans?.close();
    },
  };
}
