// The daemon's OTLP export into a real receiver: Arize Phoenix (pinned in scripts/setup-phoenix-venv.sh,
// its own venv under .cache/), started here on loopback. After a short run Phoenix's REST API returns
// the rollout's trace: the LLM calls as children of the rollout (or of its attempt) with their GenAI
// attributes, and the tool runs the harness reported, as execute_tool spans in the same trace.
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeVllm, startFakeVllm } from '../fixtures/fake-vllm';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon';
import { freePort } from '../helpers/process';
import { waitFor } from '../helpers/wait';

const PHOENIX = resolve(__dirname, '../../.cache/phoenix-venv/bin/phoenix');
const installed = existsSync(PHOENIX);
if (!installed) {
  const why = `Arize Phoenix is not installed at ${PHOENIX} (scripts/setup-phoenix-venv.sh does it)`;
  if (process.env.CI) throw new Error(why);
  process.stderr.write(`\n  SKIPPING the Phoenix test: ${why}\n`);
}

interface PhoenixSpan {
  name: string;
  context: { trace_id: string; span_id: string };
  parent_id: string | null;
  span_kind: string;
  status_code: string;
  attributes: Record<string, unknown>;
}

/** An attribute as Phoenix returns it: flat (`gen_ai.request.model`) or nested by its dots. */
function attr(span: PhoenixSpan, key: string): unknown {
  if (key in span.attributes) return span.attributes[key];
  let v: unknown = span.attributes;
  for (const part of key.split('.'))
    v = v && typeof v === 'object' ? (v as Record<string, unknown>)[part] : undefined;
  return v;
}

let phoenix: ChildProcess | undefined;
let phoenixUrl = '';
let workDir = '';
let log = '';
let fake: FakeVllm;
let daemon: TestDaemon;

beforeAll(async () => {
  if (!installed) return;
  workDir = await mkdtemp(join(tmpdir(), 'harness-rl-phoenix-'));
  const port = await freePort();
  phoenixUrl = `http://127.0.0.1:${port}`;
  phoenix = spawn(PHOENIX, ['serve'], {
    env: {
      PATH: process.env.PATH,
      HOME: workDir,
      PHOENIX_WORKING_DIR: workDir,
      PHOENIX_HOST: '127.0.0.1',
      PHOENIX_PORT: String(port),
      PHOENIX_GRPC_PORT: String(await freePort()),
      PHOENIX_TELEMETRY_ENABLED: 'false',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  phoenix.stdout?.on('data', (c) => (log = (log + c).slice(-20_000)));
  phoenix.stderr?.on('data', (c) => (log = (log + c).slice(-20_000)));
  await waitFor(
    'Phoenix to answer /healthz',
    async () => (await fetch(`${phoenixUrl}/healthz`).catch(() => null))?.ok,
    240_000,
    500,
  ).catch((e) => {
    throw new Error(`${e.message}\n${log}`);
  });
  fake = await startFakeVllm({ model: 'toy' });
  daemon = await startTestDaemon({
    backends: [fake.url],
    config: { otlp: { endpoint: `${phoenixUrl}/v1/traces`, protocol: 'http/protobuf', delay_ms: 100 } },
  });
}, 300_000);

afterAll(async () => {
  await daemon?.close();
  await fake?.close();
  phoenix?.kill('SIGTERM');
  if (phoenix && phoenix.exitCode === null) await new Promise((r) => phoenix?.once('exit', r));
  if (workDir) await rm(workDir, { recursive: true, force: true });
});

describe.skipIf(!installed)('OTLP export into Arize Phoenix', () => {
  it("Phoenix's API returns the rollout's trace: its LLM calls under it with GenAI attributes, its reported tool run beside them", async () => {
    const { id, key, openai_base_url } = (await daemon.api('POST', '/api/rollouts', {})).body;
    const openai = new OpenAI({ baseURL: openai_base_url, apiKey: key, maxRetries: 0 });
    for (const text of ['first question', 'second question'])
      await openai.chat.completions.create({ model: 'toy', messages: [{ role: 'user', content: text }] });
    // the harness's own telemetry: one tool run between the calls
    const now = Date.now();
    const report = await fetch(`${daemon.url}/r/${id}/v1/logs`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        resourceLogs: [
          {
            scopeLogs: [
              {
                logRecords: [
                  {
                    timeUnixNano: String(now * 1e6),
                    attributes: [
                      { key: 'event.name', value: { stringValue: 'codex.tool_result' } },
                      { key: 'tool_name', value: { stringValue: 'exec_command' } },
                      { key: 'call_id', value: { stringValue: 'call_1' } },
                      { key: 'duration_ms', value: { stringValue: '40' } },
                      { key: 'success', value: { stringValue: 'true' } },
                      { key: 'output_length', value: { intValue: '12' } },
                    ],
                  },
                ],
              },
            ],
          },
        ],
      }),
    });
    expect(report.status).toBe(200);
    expect((await daemon.api('POST', `/api/rollouts/${id}/reward`, { value: 1 })).status).toBe(201);
    expect((await daemon.api('POST', `/api/rollouts/${id}/complete`, {})).status).toBe(200);
    const spans = await waitFor(
      "the rollout's spans in Phoenix",
      async () => {
        const res = await fetch(`${phoenixUrl}/v1/projects/default/spans?limit=1000`);
        if (!res.ok) return null;
        const data = ((await res.json()) as { data: PhoenixSpan[] }).data;
        const root = data.find((s) => s.name === `rollout ${id}`);
        const mine = root ? data.filter((s) => s.context.trace_id === root.context.trace_id) : [];
        return mine.filter((s) => s.name === 'chat toy').length === 2 &&
          mine.some((s) => s.name === 'execute_tool exec_command')
          ? mine
          : null;
      },
      60_000,
      500,
    );
    const root = spans.find((s) => s.name === `rollout ${id}`)!;
    expect(root.parent_id ?? null).toBeNull();
    expect(attr(root, 'harness_rl.reward')).toBe(1);
    const byId = new Map(spans.map((s) => [s.context.span_id, s]));
    const underRoot = (s: PhoenixSpan) => {
      const parent = s.parent_id ? byId.get(s.parent_id) : undefined;
      return parent === root || (parent?.parent_id != null && byId.get(parent.parent_id) === root);
    };
    const calls = spans.filter((s) => s.name === 'chat toy');
    for (const call of calls) {
      expect(underRoot(call)).toBe(true);
      expect(attr(call, 'gen_ai.operation.name')).toBe('chat');
      expect(attr(call, 'gen_ai.request.model')).toBe('toy');
      expect(Number(attr(call, 'gen_ai.usage.input_tokens'))).toBeGreaterThan(0);
      expect(Number(attr(call, 'gen_ai.usage.output_tokens'))).toBeGreaterThan(0);
      expect(call.status_code).not.toBe('ERROR');
    }
    const tool = spans.find((s) => s.name === 'execute_tool exec_command')!;
    expect(underRoot(tool)).toBe(true);
    expect(attr(tool, 'gen_ai.operation.name')).toBe('execute_tool');
    expect(attr(tool, 'gen_ai.tool.name')).toBe('exec_command');
    expect(attr(tool, 'gen_ai.tool.call.id')).toBe('call_1');
  }, 120_000);
});
