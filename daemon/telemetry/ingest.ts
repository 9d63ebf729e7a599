// The OTLP/HTTP receiver: a harness's own telemetry (`POST /v1/traces`, `/v1/logs`, protobuf or
// JSON, gzip or not) in, its tool executions out onto the trajectory. `/r/<rollout>/v1/…` ties the
// report to that rollout (its key, its recording's key or the daemon token); unscoped `/v1/…` to the
// rollout or recording whose key it presents (the daemon token: the active recording). Bodies are
// bounded, decoded (otlp-proto.ts) and checked (protocol/otlp.ts) before anything is stored; every
// refusal is a 4xx naming the field. Reports may come a little after the rollout ends (exporters
// flush at exit): up to LATE_MS after it finished. `/v1/metrics` is taken (key checked) and dropped:
// CLIs that export every signal to one endpoint (Gemini CLI) get no errors for it.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { gunzipSync } from 'node:zlib';
import type { FastifyInstance } from 'fastify';
import type { z } from 'zod';
import { isRolloutKey, sameSecret } from '../api/auth';
import { discardBody } from '../api/body';
import type { DaemonContext } from '../context';
import { errorText } from '../error-text';
import { FINISHED_ROLLOUT, type NewToolRun } from '../protocol/entities';
import { issueField } from '../protocol/fields';
import { OtlpLogsRequest, OtlpTracesRequest } from '../protocol/otlp';
import { ProxyError } from '../proxy/errors';
import { installFront, proxyRequest, readBytes, sendJson } from '../proxy/front';
import { keyOf } from '../proxy/scope';
import { redactText } from '../redact';
import { decodeLogsRequest, decodeTracesRequest, ProtoError } from './otlp-proto';
import { toolRunsFromLogs, toolRunsFromSpans } from './tool-runs';

/** An OTLP body's limit, compressed and as decompressed (a CLI's batch is a few KB). */
export const INGEST_BODY_LIMIT = 4 * 1024 * 1024;
/** How long after its rollout ended a report is still taken. */
const LATE_MS = 5 * 60_000;

type Signal = 'traces' | 'logs' | 'metrics';
const SIGNALS: Record<string, Signal> = {
  '/v1/traces': 'traces',
  '/v1/logs': 'logs',
  '/v1/metrics': 'metrics',
};

const invalid = (status: number, field: string, message: string, code = 'invalid_request') =>
  new ProxyError(status, `${field}: ${message}`, field, code);

/** The rollout a report belongs to, once its key is checked. */
async function rolloutOf(ctx: DaemonContext, rid: string | undefined, key: string | null): Promise<string> {
  if (key === null)
    throw new ProxyError(
      401,
      'missing key: send the rollout or recording key as "Authorization: Bearer <key>" (OTEL_EXPORTER_OTLP_HEADERS)',
      'authorization',
      'missing_key',
    );
  const isToken = sameSecret(key, ctx.token);
  let rolloutId = rid;
  // Unscoped: the key says whose report it is (a rollout's or a recording's); the daemon token means
  // the active recording.
  if (rolloutId === undefined && !isToken) {
    rolloutId = (await ctx.store.rolloutOfKey(key)) ?? undefined;
    if (rolloutId === undefined)
      throw new ProxyError(401, 'this key is no rollout’s or recording’s key', 'authorization', 'wrong_key');
  }
  if (rolloutId === undefined) {
    const recording = await ctx.store.activeRecording();
    if (!recording)
      throw new ProxyError(
        409,
        'no active recording: start one, or send to the rollout-scoped URL /r/<rolloutId>/v1/…',
        null,
        'no_active_recording',
      );
    rolloutId = recording.rollout_id;
  }
  const rollout = await ctx.store.getRollout(rolloutId);
  if (!rollout)
    throw new ProxyError(
      404,
      `unknown rollout ${JSON.stringify(rolloutId)}`,
      'rollout_id',
      'unknown_rollout',
    );
  if (!isToken && !(await isRolloutKey(ctx, rolloutId, key)))
    throw new ProxyError(403, `this key is not valid for rollout ${rolloutId}`, 'authorization', 'wrong_key');
  const ended = rollout.finished_at ? Date.parse(rollout.finished_at) : Number.NaN;
  if (FINISHED_ROLLOUT.has(rollout.status) && !(Date.now() - ended < LATE_MS))
    throw new ProxyError(
      409,
      `rollout ${rolloutId} is ${rollout.status}: it takes no more reports`,
      null,
      `rollout_${rollout.status}`,
    );
  return rolloutId;
}

/** The body as OTLP/JSON (decoding protobuf and gzip), checked against the signal's schema. */
function parseBody(signal: Exclude<Signal, 'metrics'>, headers: IncomingMessage['headers'], raw: Buffer) {
  const encoding = String(headers['content-encoding'] ?? 'identity').toLowerCase();
  let body = raw;
  if (encoding === 'gzip') {
    try {
      body = gunzipSync(raw, { maxOutputLength: INGEST_BODY_LIMIT });
    } catch (e) {
      throw invalid(
        400,
        'body',
        `not gzip, or past ${INGEST_BODY_LIMIT} bytes unpacked (${(e as Error).message})`,
      );
    }
  } else if (encoding !== 'identity')
    throw invalid(
      415,
      'content-encoding',
      `${JSON.stringify(encoding)} is not taken (gzip or none)`,
      'unsupported_encoding',
    );
  const type = String(headers['content-type'] ?? '')
    .split(';')[0]
    .trim()
    .toLowerCase();
  let value: unknown;
  if (type === 'application/x-protobuf' || type === 'application/protobuf') {
    try {
      value = signal === 'traces' ? decodeTracesRequest(body) : decodeLogsRequest(body);
    } catch (e) {
      if (e instanceof ProtoError)
        throw invalid(400, e.field, e.message.slice(e.field.length + 2), 'invalid_protobuf');
      throw e;
    }
  } else if (type === 'application/json') {
    try {
      value = JSON.parse(body.toString('utf8'));
    } catch (e) {
      throw invalid(400, 'body', `invalid JSON (${(e as Error).message})`, 'invalid_json');
    }
  } else
    throw invalid(
      415,
      'content-type',
      `${JSON.stringify(type)}: send application/x-protobuf or application/json`,
      'unsupported_media_type',
    );
  const schema: z.ZodType = signal === 'traces' ? OtlpTracesRequest : OtlpLogsRequest;
  const checked = schema.safeParse(value);
  if (!checked.success) {
    const issue = checked.error.issues[0];
    const field = issueField(issue, []) || 'body';
    throw invalid(400, field, issue?.message ?? 'invalid', 'invalid_request');
  }
  return { value: checked.data, protobuf: type !== 'application/json' };
}

async function ingest(
  ctx: DaemonContext,
  msg: IncomingMessage,
  res: ServerResponse,
  signal: Signal,
  rid: string | undefined,
) {
  if (msg.method !== 'POST')
    throw new ProxyError(405, `${msg.method} ${msg.url}: OTLP/HTTP takes POST`, null, 'method_not_allowed');
  // The key is checked before the body is read: a stranger's body is dropped unread (fail).
  const rolloutId = await rolloutOf(ctx, rid, keyOf(msg.headers));
  const raw = await readBytes(msg, res, INGEST_BODY_LIMIT);
  let protobuf = !String(msg.headers['content-type'] ?? '').includes('json');
  if (signal !== 'metrics') {
    const parsed = parseBody(signal, msg.headers, raw);
    protobuf = parsed.protobuf;
    const runs: NewToolRun[] =
      signal === 'traces'
        ? toolRunsFromSpans(parsed.value as OtlpTracesRequest)
        : toolRunsFromLogs(parsed.value as OtlpLogsRequest);
    if (runs.length > 0) await ctx.store.addToolRuns(rolloutId, runs);
  }
  // An empty Export…ServiceResponse: full success.
  if (protobuf) {
    res.writeHead(200, { 'content-type': 'application/x-protobuf', 'content-length': 0 });
    res.end();
  } else sendJson(res, 200, '{}');
}

async function fail(ctx: DaemonContext, msg: IncomingMessage, res: ServerResponse, err: unknown) {
  const e =
    err instanceof ProxyError ? err : new ProxyError(500, `telemetry ingest failed: ${errorText(err)}`);
  if (e.status >= 500) ctx.log('telemetry: an OTLP report failed', { error: e.message });
  if (res.headersSent) return void res.destroy();
  if (!(await discardBody(msg))) res.setHeader('connection', 'close');
  if (res.headersSent) return;
  sendJson(
    res,
    e.status,
    JSON.stringify({ error: { message: redactText(e.message), field: e.param, code: e.code ?? 'error' } }),
  );
}

/** Takes OTLP reports (`/v1/traces`, `/v1/logs`, `/v1/metrics`, also under `/r/<rollout>`) ahead of the proxy's routes. */
export function registerIngest(app: FastifyInstance, ctx: DaemonContext): void {
  installFront(
    app.server,
    (msg, res) => {
      // Most requests are the proxy's: a look at the URL's end before parsing it
      const url = msg.url ?? '';
      if (!url.includes('/v1/traces') && !url.includes('/v1/logs') && !url.includes('/v1/metrics'))
        return false;
      const req = proxyRequest(msg);
      const signal = req && SIGNALS[req.path];
      if (!req || !signal) return false;
      const run = req.problem ? Promise.reject(req.problem) : ingest(ctx, msg, res, signal, req.rid);
      run.catch((err) => fail(ctx, msg, res, err));
      return true;
    },
    true,
  );
}
