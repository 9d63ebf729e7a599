// The daemon's OTLP receiver: a harness's own telemetry in (`/r/<rollout>/v1/logs|traces`, unscoped
// for the active recording), protobuf from the official OpenTelemetry serializer and OTLP/JSON, its
// tool executions on the rollout (tool, start, duration, success, result size), redacted, repeated
// reports stored once, and every refusal a 4xx that names the field.
import { gzipSync } from 'node:zlib';
import { ProtobufLogsSerializer, ProtobufTraceSerializer } from '@opentelemetry/otlp-transformer';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ToolRun } from '../../daemon/protocol/entities';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon';

let daemon: TestDaemon;
beforeAll(async () => {
  daemon = await startTestDaemon();
});
afterAll(async () => {
  await daemon?.close();
});

const FAKE_SECRET = 'sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789';
const str = (key: string, value: string) => ({ key, value: { stringValue: value } });

/** A Claude Code tool_result event as its OTLP/JSON log exporter sends it (attributes from Claude Code 2.1). */
function claudeToolResult(at: Date, extra: { key: string; value: object }[] = []) {
  return {
    resourceLogs: [
      {
        resource: { attributes: [str('service.name', 'claude-code')] },
        scopeLogs: [
          {
            scope: { name: 'com.anthropic.claude_code.events' },
            logRecords: [
              {
                timeUnixNano: String(at.getTime() * 1_000_000),
                body: { stringValue: 'claude_code.tool_result' },
                attributes: [
                  str('event.name', 'tool_result'),
                  str('event.timestamp', at.toISOString()),
                  str('user.email', 'someone@example.com'),
                  str('tool_name', 'Bash'),
                  str('tool_use_id', 'toolu_01'),
                  str('success', 'true'),
                  str('duration_ms', '250'),
                  str('tool_result_size_bytes', '1234'),
                  str(
                    'tool_parameters',
                    JSON.stringify({ bash_command: `curl -H "x-api-key: ${FAKE_SECRET}"` }),
                  ),
                  ...extra,
                ],
              },
            ],
          },
        ],
      },
    ],
  };
}

async function post(path: string, body: Uint8Array | string, headers: Record<string, string>) {
  const res = await fetch(`${daemon.url}${path}`, { method: 'POST', headers, body });
  const text = await res.text();
  return {
    status: res.status,
    type: res.headers.get('content-type'),
    text,
    json: text.startsWith('{') ? JSON.parse(text) : null,
  };
}

const json = (key: string) => ({ authorization: `Bearer ${key}`, 'content-type': 'application/json' });
const proto = (key: string) => ({ authorization: `Bearer ${key}`, 'content-type': 'application/x-protobuf' });

async function rollout() {
  const r = await daemon.api('POST', '/api/rollouts', {});
  expect(r.status).toBe(201);
  return r.body as { id: string; key: string };
}
async function toolRuns(id: string): Promise<ToolRun[]> {
  return (await daemon.api('GET', `/api/rollouts/${id}`)).body.tool_runs;
}

describe('OTLP ingest', () => {
  it("a Claude Code tool_result log sent as OTLP/JSON to the rollout's URL is a tool run on the rollout, its secrets redacted and who the user is left out", async () => {
    const { id, key } = await rollout();
    const at = new Date('2026-12-07T00:00:01.000Z');
    const r = await post(`/r/${id}/v1/logs`, JSON.stringify(claudeToolResult(at)), json(key));
    expect(r.status, r.text).toBe(200);
    expect(r.json).toEqual({});
    const [run, ...more] = await toolRuns(id);
    expect(more).toEqual([]);
    expect(run).toMatchObject({
      rollout_id: id,
      tool: 'Bash',
      call_id: 'toolu_01',
      started_at: '2026-12-07T00:00:00.750Z',
      duration_ms: 250,
      success: true,
      result_bytes: 1234,
      error: null,
      source: 'claude_code.tool_result',
      agent: 'claude-code',
    });
    const kept = JSON.stringify(run.attributes);
    expect(kept).toContain('curl -H');
    expect(kept).not.toContain(FAKE_SECRET);
    expect(kept).toContain('[redacted]');
    expect(kept).not.toContain('someone@example.com');
    // an exporter's retry of the same batch is stored once
    expect((await post(`/r/${id}/v1/logs`, JSON.stringify(claudeToolResult(at)), json(key))).status).toBe(
      200,
    );
    expect(await toolRuns(id)).toHaveLength(1);
  });

  it('GenAI execute_tool spans from the OpenTelemetry SDK, sent as protobuf (and gzipped), are tool runs; a failed one says so', async () => {
    const { id, key } = await rollout();
    const exporter = new InMemorySpanExporter();
    const provider = new BasicTracerProvider({
      resource: resourceFromAttributes({ 'service.name': 'my-agent' }),
      spanProcessors: [new SimpleSpanProcessor(exporter)],
    });
    const tracer = provider.getTracer('agent');
    const t0 = Date.UTC(2026, 11, 7, 0, 0, 0);
    const agent = tracer.startSpan('invoke_agent', { startTime: t0 });
    const tool = tracer.startSpan('execute_tool search', {
      startTime: t0 + 100,
      attributes: {
        'gen_ai.operation.name': 'execute_tool',
        'gen_ai.tool.name': 'search',
        'gen_ai.tool.call.id': 'call_9',
        'gen_ai.tool.call.result': 'x'.repeat(300),
      },
    });
    tool.end(t0 + 400);
    const broken = tracer.startSpan('execute_tool read_file', {
      startTime: t0 + 500,
      attributes: { 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': 'read_file' },
    });
    broken.setStatus({ code: 2, message: 'ENOENT: no such file' });
    broken.end(t0 + 520);
    agent.end(t0 + 600);
    const body = ProtobufTraceSerializer.serializeRequest(exporter.getFinishedSpans())!;
    const r = await post(`/r/${id}/v1/traces`, gzipSync(body), { ...proto(key), 'content-encoding': 'gzip' });
    expect(r.status, r.text).toBe(200);
    expect(r.type).toBe('application/x-protobuf');
    const runs = await toolRuns(id);
    expect(
      runs.map((t) => [t.tool, t.call_id, t.duration_ms, t.success, t.result_bytes, t.error, t.agent]),
    ).toEqual([
      ['search', 'call_9', 300, true, 300, null, 'my-agent'],
      ['read_file', null, 20, false, null, 'ENOENT: no such file', 'my-agent'],
    ]);
    expect(runs[0].started_at).toBe(new Date(t0 + 100).toISOString());
  });

  it('protobuf logs from the official serializer (Codex-shaped codex.tool_result) land on the active recording through the unscoped URL', async () => {
    const rec = await daemon.api('POST', '/api/recordings', {
      name: 'ingest',
      upstream: { kind: 'vllm', base_url: 'http://127.0.0.1:9' },
    });
    expect(rec.status).toBe(201);
    try {
      const now = Date.now();
      const record = {
        hrTime: [Math.floor(now / 1000), (now % 1000) * 1e6] as [number, number],
        hrTimeObserved: [Math.floor(now / 1000), (now % 1000) * 1e6] as [number, number],
        resource: resourceFromAttributes({ 'service.name': 'codex_exec' }),
        instrumentationScope: { name: 'codex_otel' },
        attributes: {
          'event.name': 'codex.tool_result',
          tool_name: 'exec_command',
          call_id: 'call_abc',
          duration_ms: '42',
          success: 'false',
          output: 'permission denied',
        },
        droppedAttributesCount: 0,
      };
      const body = ProtobufLogsSerializer.serializeRequest([record])!;
      const r = await post('/v1/logs', body, proto(rec.body.key));
      expect(r.status, r.text).toBe(200);
      const detail = (await daemon.api('GET', `/api/recordings/${rec.body.id}`)).body;
      expect(detail.tool_runs).toHaveLength(1);
      expect(detail.tool_runs[0]).toMatchObject({
        tool: 'exec_command',
        call_id: 'call_abc',
        duration_ms: 42,
        success: false,
        error: 'permission denied',
        result_bytes: 17,
        source: 'codex.tool_result',
        agent: 'codex_exec',
      });
    } finally {
      await daemon.api('POST', `/api/recordings/${rec.body.id}/stop`, {});
    }
  });

  it("a rollout's key on the unscoped URL ties the report to that rollout; a key nobody holds is refused naming authorization", async () => {
    const { id, key } = await rollout();
    const body = JSON.stringify(claudeToolResult(new Date('2026-12-07T00:00:03.000Z')));
    const r = await post('/v1/logs', body, json(key));
    expect(r.status, r.text).toBe(200);
    expect((await toolRuns(id)).map((t) => t.tool)).toEqual(['Bash']);
    const stranger = await post('/v1/logs', body, json('hrk_nobody_holds_this_key_0000000000000'));
    expect(stranger.status).toBe(401);
    expect(stranger.json.error.field).toBe('authorization');
  });

  it('metrics a CLI exports beside its logs (Gemini CLI: one endpoint for all) are taken with the key and dropped; without it, 401', async () => {
    const { id, key } = await rollout();
    const ok = await post(`/r/${id}/v1/metrics`, new Uint8Array([10, 0]), proto(key));
    expect(ok.status, ok.text).toBe(200);
    expect(ok.type).toBe('application/x-protobuf');
    expect((await post('/v1/metrics', '{"resourceMetrics": []}', json(key))).status).toBe(200);
    const none = await post(`/r/${id}/v1/metrics`, new Uint8Array([10, 0]), {
      'content-type': 'application/x-protobuf',
    });
    expect(none.status).toBe(401);
    expect(none.json.error.field).toBe('authorization');
    expect(await toolRuns(id)).toEqual([]);
  });

  it('refusals are 4xx answers that name the field: key, rollout, content type, encoding, schema, protobuf, size', async () => {
    const { id, key } = await rollout();
    const other = await rollout();
    const body = JSON.stringify(claudeToolResult(new Date()));
    const cases: [string, () => ReturnType<typeof post>, number, string | null][] = [
      [
        'no key',
        () => post(`/r/${id}/v1/logs`, body, { 'content-type': 'application/json' }),
        401,
        'authorization',
      ],
      ["another rollout's key", () => post(`/r/${id}/v1/logs`, body, json(other.key)), 403, 'authorization'],
      [
        'unknown rollout',
        () => post('/r/ro_0000000000000000000000000/v1/logs', body, json(key)),
        404,
        'rollout_id',
      ],
      ['bad rollout id', () => post('/r/%E0%A4%A/v1/logs', body, json(key)), 400, 'rollout_id'],
      [
        'text/plain',
        () => post(`/r/${id}/v1/logs`, body, { ...json(key), 'content-type': 'text/plain' }),
        415,
        'content-type',
      ],
      [
        'br',
        () => post(`/r/${id}/v1/logs`, body, { ...json(key), 'content-encoding': 'br' }),
        415,
        'content-encoding',
      ],
      ['invalid JSON', () => post(`/r/${id}/v1/logs`, '{"resourceLogs": [', json(key)), 400, 'body'],
      [
        'a time that is no number',
        () =>
          post(
            `/r/${id}/v1/logs`,
            JSON.stringify({ resourceLogs: [{ scopeLogs: [{ logRecords: [{ timeUnixNano: 'soon' }] }] }] }),
            json(key),
          ),
        400,
        'resourceLogs[0].scopeLogs[0].logRecords[0].timeUnixNano',
      ],
      [
        'truncated protobuf',
        () => post(`/r/${id}/v1/traces`, new Uint8Array([0x0a, 0x50, 0x0a]), proto(key)),
        400,
        'body.resourceSpans',
      ],
      ['too large', () => post(`/r/${id}/v1/logs`, 'x'.repeat(5 * 1024 * 1024), json(key)), 413, 'body'],
    ];
    for (const [what, answer, status, field] of cases) {
      const r = await answer().catch((e) => ({
        status: -1,
        type: null,
        text: String(e.cause ?? e),
        json: null,
      }));
      expect(r.status, `${what}: ${r.text}`).toBe(status);
      expect(r.json?.error?.field, what).toBe(field);
    }
    expect(await toolRuns(id)).toEqual([]);
    // GET is no OTLP export
    const get = await fetch(`${daemon.url}/r/${id}/v1/logs`, { headers: { authorization: `Bearer ${key}` } });
    expect(get.status).toBe(405);
  });
});
