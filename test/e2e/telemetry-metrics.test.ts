// GET /metrics in the real daemon: the daemon token required, the text parsed by a Prometheus text-format
// parser, and the proxy's counters moved by real calls through the daemon.
import { readFileSync } from 'node:fs';
import OpenAI from 'openai';
import parsePrometheusTextFormat, { type Family } from 'parse-prometheus-text-format';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeVllm, startFakeVllm } from '../fixtures/fake-vllm';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon';

let fake: FakeVllm;
let daemon: TestDaemon;

beforeAll(async () => {
  fake = await startFakeVllm({ model: 'toy' });
  daemon = await startTestDaemon({ backends: [fake.url] });
});
afterAll(async () => {
  await daemon?.close();
  await fake?.close();
});

async function scrape(): Promise<Family[]> {
  const res = await fetch(`${daemon.url}/metrics`, { headers: { authorization: `Bearer ${daemon.token}` } });
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toContain('text/plain');
  return parsePrometheusTextFormat(await res.text());
}

function sample(families: Family[], name: string, labels: Record<string, string> = {}): number {
  const family = families.find((f) => f.name === name);
  const s = family?.metrics.find((m) => Object.entries(labels).every(([k, v]) => m.labels?.[k] === v));
  return s ? Number(s.value) : 0;
}

/** A histogram's observation count over all its label sets (the parser keeps the buckets, not the labels). */
function observed(families: Family[], name: string): number {
  const family = families.find((f) => f.name === name);
  expect(family?.type).toBe('HISTOGRAM');
  return (family?.metrics ?? []).reduce((n, m) => n + Number(m.buckets?.['+Inf'] ?? 0), 0);
}

describe('Prometheus metrics', () => {
  it('/metrics answers 401 without the daemon token and with a rollout key', async () => {
    expect((await fetch(`${daemon.url}/metrics`)).status).toBe(401);
    const { key } = (await daemon.api('POST', '/api/rollouts', {})).body;
    const res = await fetch(`${daemon.url}/metrics`, { headers: { authorization: `Bearer ${key}` } });
    expect(res.status).toBe(401);
    expect(((await res.json()) as { error: { field: string } }).error.field).toBe('authorization');
  });

  it('calls through the daemon move the call, token and latency counters, and a failed call the error counter', async () => {
    const before = await scrape();
    const ok = { wire_api: 'chat', status: 'ok', token_source: 'backend' };
    const calls0 = sample(before, 'harness_rl_proxy_calls_total', ok);
    const in0 = sample(before, 'harness_rl_proxy_tokens_total', { direction: 'in' });
    const { id, key, openai_base_url } = (await daemon.api('POST', '/api/rollouts', {})).body;
    const openai = new OpenAI({ baseURL: openai_base_url, apiKey: key, maxRetries: 0 });
    for (const text of ['one', 'two'])
      await openai.chat.completions.create({ model: 'toy', messages: [{ role: 'user', content: text }] });
    await expect(
      openai.chat.completions.create({ model: 'toy', messages: [{ role: 'user', content: 'x' }], n: 0 }),
    ).rejects.toThrow();
    const after = await scrape();
    expect(sample(after, 'harness_rl_proxy_calls_total', ok)).toBe(calls0 + 2);
    expect(sample(after, 'harness_rl_proxy_tokens_total', { direction: 'in' })).toBeGreaterThan(in0);
    expect(sample(after, 'harness_rl_proxy_tokens_total', { direction: 'out' })).toBeGreaterThan(0);
    expect(observed(after, 'harness_rl_proxy_call_seconds')).toBeGreaterThanOrEqual(2);
    expect(observed(after, 'harness_rl_proxy_backend_seconds')).toBeGreaterThanOrEqual(2);
    expect(observed(after, 'harness_rl_proxy_added_seconds')).toBeGreaterThanOrEqual(2);
    const errors = after.find((f) => f.name === 'harness_rl_proxy_errors_total');
    expect(errors?.type).toBe('COUNTER');
    expect(errors?.metrics.some((m) => m.labels?.kind === 'request' && Number(m.value) >= 1)).toBe(true);
    expect(after.find((f) => f.name === 'harness_rl_recorder_queue_depth')?.type).toBe('GAUGE');
    await daemon.api('POST', `/api/rollouts/${id}/complete`, {});
  });

  it('a tool run a harness reports counts once by agent, tool and success, its duration in the histogram', async () => {
    const str = (key: string, value: string) => ({ key, value: { stringValue: value } });
    const report = (toolUseId: string, success: string) =>
      JSON.stringify({
        resourceLogs: [
          {
            resource: { attributes: [str('service.name', 'gemini-cli')] },
            scopeLogs: [
              {
                logRecords: [
                  {
                    timeUnixNano: String(Date.now() * 1_000_000),
                    attributes: [
                      str('event.name', 'gemini_cli.tool_call'),
                      str('function_name', 'write_file'),
                      str('call_id', toolUseId),
                      str('success', success),
                      str('duration_ms', '1500'),
                    ],
                  },
                ],
              },
            ],
          },
        ],
      });
    const labels = { agent: 'gemini-cli', tool: 'write_file' };
    const before = await scrape();
    const ok0 = sample(before, 'harness_rl_tool_runs_total', { ...labels, success: 'true' });
    const failed0 = sample(before, 'harness_rl_tool_runs_total', { ...labels, success: 'false' });
    // the parser keeps a histogram's buckets, not its labels: summed over them (only this test reports tools)
    const inBucket = (families: Family[], le: string) =>
      (families.find((f) => f.name === 'harness_rl_tool_run_seconds')?.metrics ?? []).reduce(
        (n, m) => n + Number(m.buckets?.[le] ?? 0),
        0,
      );
    const { id, key } = (await daemon.api('POST', '/api/rollouts', {})).body;
    const send = (body: string) =>
      fetch(`${daemon.url}/r/${id}/v1/logs`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body,
      });
    expect((await send(report('p1', 'true'))).status).toBe(200);
    expect((await send(report('p1', 'true'))).status).toBe(200); // the same report again: stored once
    expect((await send(report('p2', 'false'))).status).toBe(200);
    expect((await daemon.api('GET', `/api/rollouts/${id}`)).body.tool_runs).toHaveLength(2);
    const after = await scrape();
    expect(sample(after, 'harness_rl_tool_runs_total', { ...labels, success: 'true' })).toBe(ok0 + 1);
    expect(sample(after, 'harness_rl_tool_runs_total', { ...labels, success: 'false' })).toBe(failed0 + 1);
    expect(after.find((f) => f.name === 'harness_rl_tool_run_seconds')?.type).toBe('HISTOGRAM');
    expect(observed(after, 'harness_rl_tool_run_seconds') - inBucket(before, '+Inf')).toBe(2);
    // 1.5 s each: above the 1 s bound, within 2.5 s
    expect(inBucket(after, '1') - inBucket(before, '1')).toBe(0);
    expect(inBucket(after, '2.5') - inBucket(before, '2.5')).toBe(2);
    await daemon.api('POST', `/api/rollouts/${id}/complete`, {});
  });

  it('every metric the Grafana dashboard in docs/ queries is one /metrics serves', async () => {
    const names = new Set((await scrape()).map((f) => f.name));
    const dashboard = JSON.parse(
      readFileSync(new URL('../../docs/grafana-dashboard.json', import.meta.url), 'utf8'),
    );
    const exprs: string[] = dashboard.panels.flatMap((p: { targets: { expr: string }[] }) =>
      p.targets.map((t) => t.expr),
    );
    const used = new Set(exprs.flatMap((e) => e.match(/harness_rl_[a-z_]+/g) ?? []));
    expect(used.size).toBeGreaterThan(10);
    for (const name of used) expect(names, name).toContain(name.replace(/_bucket$/, ''));
  });
});
