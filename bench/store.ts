// Trace store figures for both backends (PostgreSQL from HARNESS_RL_TEST_PG, skipped if unreachable):
//   store.ingest  — llm calls/s, each with 4096 prompt ids and 1024 response ids + logprobs, in
//                   recordLlmCalls batches of 100 and as single recordLlmCall transactions;
//   store.page    — one page of 100 rollouts of a run with 100,000 rollouts, filtered by status;
//   store.rollout — loading one rollout with its 50 llm calls (getRollout + listLlmCalls);
//   store.agent   — agent rollouts as the proxy records them: 32 rollouts of 40 turns, each turn's
//                   prompt the last one plus its answer and a tool result (2k → ~30k ids), a turn of
//                   all rollouts per recordLlmCalls (the proxy's group commit), the request's history
//                   growing alike (2 → 80 messages) and the backend's the same with the proxy's extras
//                   (`native`) or the bridge's token prompt (`bridged`);
//                   calls/s, CPU and prompt and body bytes stored per call, loading a rollout's calls
//                   and its last call alone;
//   store.small   — small calls as the proxy records them (a one-line chat, 20 prompt and 16 response
//                   ids with logprobs, its bodies as JsonText), alone (one transaction each: the proxy at
//                   one client) and 20 to a transaction (its group commit at 64 clients): µs per call.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import type { LlmCall, NewLlmCall } from '../daemon/protocol/entities';
import { JsonText } from '../daemon/store/json-text';
import { openStore } from '../daemon/store/open';
import { dropPgSchema, PG_SHOWN, pgSchemaUrl, postgresProblem } from '../daemon/store/pg-testing';
import type { SqlStore } from '../daemon/store/sql-store';
import type { Store } from '../daemon/store/store';
import { emit, quantile, round } from './emit';

const PROMPT = 4096;
const RESPONSE = 1024;
const INGEST_SECONDS = Number(process.env.BENCH_STORE_SECONDS ?? 3);
const ONLY = process.env.BENCH_STORE_ONLY; // e.g. 'sqlite:ingest' while tuning
const ROLLOUTS = 100_000;

function makeCalls(n: number): Omit<NewLlmCall, 'rollout_id'>[] {
  return Array.from({ length: n }, (_, k) => {
    const prompt = Array.from({ length: PROMPT }, (_, i) => (i * 7919 + k * 104729) % 151_000);
    const response = Array.from({ length: RESPONSE }, (_, i) => (i * 31 + k) % 151_000);
    return {
      attempt_id: null,
      recording_id: null,
      wire_api: 'chat' as const,
      stream: true,
      request: {
        model: 'qwen3-4b',
        messages: [
          { role: 'system', content: 'You are a careful assistant that uses tools.' },
          { role: 'user', content: `Task ${k}: compute the answer and explain briefly.` },
        ],
        max_tokens: RESPONSE,
        temperature: 1,
      },
      backend_request: null,
      response: { choices: [{ index: 0, message: { role: 'assistant', content: 'x'.repeat(400) } }] },
      prompt_ids: prompt,
      response_ids: response,
      response_logprobs: response.map((_, i) => -Math.abs(Math.sin(i + k)) * 3),
      token_source: 'backend' as const,
      bridge: null,
      finish_reason: 'stop',
      usage: { prompt_tokens: PROMPT, completion_tokens: RESPONSE },
      model: 'qwen3-4b',
      model_version: 0,
      backend: 'vllm',
      status: 'ok' as const,
      error: null,
      http_status: 200,
      tags: [],
      queue_ms: 1,
      ttft_ms: 20,
      total_ms: 900,
    };
  });
}

async function ingest(store: Store, backend: string): Promise<void> {
  // 7 templates over 64 rollouts: a rollout's next call never repeats its last one's prompt (with 8,
  // each rollout would get one template, and the store would keep its repeats as empty rests).
  const templates = makeCalls(7);
  const rollouts = await store.createRollouts(
    Array.from({ length: 64 }, () => ({ kind: 'standalone' as const })),
  );
  let n = 0;
  const next = (): NewLlmCall => {
    n++;
    return { ...templates[n % templates.length], rollout_id: rollouts[n % rollouts.length].id };
  };
  for (const mode of ['batch', 'single'] as const) {
    let calls = 0;
    const cpu = process.cpuUsage();
    const start = performance.now();
    while (performance.now() - start < INGEST_SECONDS * 1000) {
      if (mode === 'batch') {
        await store.recordLlmCalls(Array.from({ length: 100 }, next));
        calls += 100;
      } else {
        await store.recordLlmCall(next());
        calls++;
      }
    }
    const seconds = (performance.now() - start) / 1000;
    const used = process.cpuUsage(cpu);
    emit('store.ingest', {
      backend,
      mode: mode === 'batch' ? 'recordLlmCalls x100' : 'recordLlmCall',
      calls_per_s: Math.round(calls / seconds),
      calls,
      // This process's CPU (user+sys) per call: what the rate would be on an idle core, roughly,
      // when the shared machine is busy (see load1).
      cpu_ms_per_call: round((used.user + used.system) / 1000 / calls),
      load1: round(loadavg()[0], 1),
      prompt_tokens: PROMPT,
      response_tokens: RESPONSE,
    });
  }
}

async function paging(store: Store, backend: string): Promise<void> {
  const run = await store.createRun({ name: 'bench', config: {} });
  const group = await store.createGroup({ run_id: run.id, task_id: null, step: 0, size: ROLLOUTS });
  for (let i = 0; i < ROLLOUTS; i += 10_000) {
    await store.createRollouts(
      Array.from({ length: 10_000 }, (_, j) => ({
        kind: 'run' as const,
        run_id: run.id,
        group_id: group.id,
        input: { task: i + j },
      })),
    );
  }
  // Spread the statuses (a fifth each) and give half the rollouts a reward, as a busy run would have.
  const driver = (store as SqlStore).driver;
  const statuses = ['queued', 'running', 'succeeded', 'failed', 'cancelled'];
  const ids = (
    await driver.all<{ id: string }>('SELECT id FROM rollouts WHERE run_id = ? ORDER BY id', [run.id])
  ).map((r) => r.id);
  await driver.transaction(async (q) => {
    for (let s = 0; s < statuses.length; s++) {
      const part = ids.filter((_, i) => i % statuses.length === s);
      for (let i = 0; i < part.length; i += 1000) {
        const chunk = part.slice(i, i + 1000);
        await q.run(
          `UPDATE rollouts SET status = ?, reward = ? WHERE id IN (${chunk.map(() => '?').join(', ')})`,
          [statuses[s], s % 2 === 0 ? 1 : null, ...chunk],
        );
      }
    }
  });
  if (backend === 'postgres') await driver.exec('ANALYZE rollouts');
  const times: number[] = [];
  const succeeded = ids.filter((_, i) => i % statuses.length === 2);
  for (let i = 0; i < 300; i++) {
    const cursor =
      i % 10 === 0 ? undefined : succeeded[100 + Math.floor(Math.random() * (succeeded.length - 100))];
    const t = performance.now();
    const page = await store.listRollouts({ run_id: run.id, status: 'succeeded', limit: 100, cursor });
    times.push(performance.now() - t);
    if (page.items.length !== 100) throw new Error(`page had ${page.items.length} rollouts`);
  }
  emit('store.page', {
    backend,
    rollouts: ROLLOUTS,
    filter: 'run_id+status',
    limit: 100,
    p50_ms: round(quantile(times, 0.5)),
    p99_ms: round(quantile(times, 0.99)),
    load1: round(loadavg()[0], 1),
  });
}

async function loadRollout(store: Store, backend: string): Promise<void> {
  const ro = await store.createRollout({ kind: 'standalone' });
  const templates = makeCalls(50);
  await store.recordLlmCalls(templates.map((c) => ({ ...c, rollout_id: ro.id })));
  const times: number[] = [];
  for (let i = 0; i < 200; i++) {
    const t = performance.now();
    const rollout = await store.getRollout(ro.id);
    const calls = await store.listLlmCalls(ro.id);
    times.push(performance.now() - t);
    if (!rollout || calls.length !== 50 || calls[49].prompt_ids?.length !== PROMPT)
      throw new Error('bad load');
  }
  emit('store.rollout', {
    backend,
    calls: 50,
    prompt_tokens: PROMPT,
    response_tokens: RESPONSE,
    p50_ms: round(quantile(times.slice(20), 0.5)),
    p99_ms: round(quantile(times.slice(20), 0.99)),
    load1: round(loadavg()[0], 1),
  });
}

const AGENT_ROLLOUTS = 32;
const AGENT_TURNS = 40;
const AGENT_TOOLS = Array.from({ length: 8 }, (_, i) => ({
  type: 'function',
  function: {
    name: `tool_${i}`,
    description: 'Runs one step of the task and reports what it found. '.repeat(4),
    parameters: { type: 'object', properties: { path: { type: 'string' }, query: { type: 'string' } } },
  },
}));

/** Turn `t` of an agent rollout: its prompt (the last one, its answer, a tool result) and answer. */
function agentTurn(prompt: number[], r: number, t: number): { prompt: number[]; response: number[] } {
  const response = Array.from({ length: 200 }, (_, i) => (i * 31 + r * 7 + t) % 151_000);
  const tool = Array.from({ length: 300 + (t % 5) * 40 }, (_, i) => (i * 17 + t * 13 + r) % 151_000);
  return { prompt, response: response.concat(tool) };
}

/**
 * Every turn's calls, as the proxy hands them to the store: the request as text, and the backend's
 * request the same with the proxy's extras (native) or the bridge's token prompt (bridged).
 */
function agentCalls(
  rollouts: { id: string }[],
  calls: 'native' | 'bridged',
): { turns: NewLlmCall[][]; ids: number } {
  const template = makeCalls(1)[0];
  const prompts = rollouts.map((_, r) => Array.from({ length: 2000 }, (_, i) => (i * 7919 + r) % 151_000));
  const histories = rollouts.map((_, r) => [
    { role: 'system', content: 'You are a careful coding agent. '.repeat(40) },
    { role: 'user', content: `Task ${r}: fix the failing test and explain the change.` },
  ]);
  const turns: NewLlmCall[][] = [];
  let ids = 0;
  for (let t = 0; t < AGENT_TURNS; t++)
    turns.push(
      rollouts.map((ro, r) => {
        const { prompt, response } = agentTurn(prompts[r], r, t);
        const answer = response.slice(0, 200);
        prompts[r] = prompt.concat(response);
        ids += prompt.length;
        const request = {
          model: 'qwen3-4b',
          messages: [...histories[r]],
          tools: AGENT_TOOLS,
          max_tokens: 2048,
        };
        const text = JSON.stringify(request);
        const sent =
          calls === 'native'
            ? `${text.slice(0, -1)},"return_token_ids":true,"logprobs":true}`
            : JSON.stringify({ model: 'qwen3-4b', prompt, max_tokens: 2048, return_token_ids: true });
        histories[r].push(
          { role: 'assistant', content: `Step ${t}: reading the next file. `.repeat(8) },
          { role: 'tool', content: `line ${t} of the tool's output\n`.repeat(40) },
        );
        return {
          ...template,
          rollout_id: ro.id,
          request: new JsonText(text, request),
          backend_request: new JsonText(sent, JSON.parse(sent)),
          prompt_ids: prompt,
          response_ids: answer,
          response_logprobs: answer.map((_, i) => -Math.abs(Math.sin(i + t))),
          usage: { prompt_tokens: prompt.length, completion_tokens: answer.length },
        };
      }),
    );
  return { turns, ids };
}

/** Where a call's request and backend request are stored (whole, or as the rest after what they repeat). */
const BODY_COLUMNS = ['request', 'backend_request', 'request_rest', 'backend_rest'];

async function agentRollouts(store: Store, backend: string): Promise<void> {
  for (const calls of ['native', 'bridged'] as const) await agentRolloutsOf(store, backend, calls);
}

async function agentRolloutsOf(store: Store, backend: string, callsOf: 'native' | 'bridged'): Promise<void> {
  const rollouts = await store.createRollouts(
    Array.from({ length: AGENT_ROLLOUTS }, () => ({ kind: 'standalone' as const })),
  );
  const { turns, ids } = agentCalls(rollouts, callsOf);
  let calls = 0;
  const cpu = process.cpuUsage();
  const start = performance.now();
  for (const batch of turns) {
    await store.recordLlmCalls(batch);
    calls += batch.length;
  }
  const seconds = (performance.now() - start) / 1000;
  const used = process.cpuUsage(cpu);
  const driver = (store as SqlStore).driver;
  const bytes = (column: string) =>
    driver.dialect === 'postgres'
      ? `COALESCE(octet_length(${column}::text), 0)`
      : `COALESCE(length(CAST(${column} AS BLOB)), 0)`;
  const stored = await driver.get<{ bytes: number; body_bytes: number }>(
    `SELECT SUM(length(prompt_ids)) AS bytes, SUM(${BODY_COLUMNS.map(bytes).join(' + ')}) AS body_bytes FROM llm_calls WHERE rollout_id IN (${rollouts.map(() => '?').join(', ')})`,
    rollouts.map((r) => r.id),
  );
  const last = rollouts[rollouts.length - 1];
  const lastCall = turns[turns.length - 1][rollouts.length - 1];
  // The two reads in separate loops: the garbage a rollout's read leaves would land in the next one.
  const listed: number[] = [];
  let all: LlmCall[] = [];
  for (let i = 0; i < 60; i++) {
    const t0 = performance.now();
    all = await store.listLlmCalls(last.id);
    listed.push(performance.now() - t0);
  }
  const single: number[] = [];
  let one: LlmCall | null = null;
  for (let i = 0; i < 60; i++) {
    const t0 = performance.now();
    one = await store.getLlmCall(all[all.length - 1].id);
    single.push(performance.now() - t0);
  }
  if (
    all.length !== AGENT_TURNS ||
    JSON.stringify(one?.prompt_ids) !== JSON.stringify(lastCall.prompt_ids) ||
    JSON.stringify(one?.backend_request) !== JSON.stringify(lastCall.backend_request)
  )
    throw new Error(`rollout read back wrong (${all.length} calls, last prompt ${one?.prompt_ids?.length})`);
  emit('store.agent', {
    backend,
    calls: callsOf,
    rollouts: AGENT_ROLLOUTS,
    turns: AGENT_TURNS,
    mean_prompt_tokens: Math.round(ids / calls),
    calls_per_s: Math.round(calls / seconds),
    cpu_ms_per_call: round((used.user + used.system) / 1000 / calls),
    prompt_bytes_per_call: Math.round(Number(stored?.bytes ?? 0) / calls),
    prompt_bytes_per_token: round(Number(stored?.bytes ?? 0) / ids, 2),
    body_bytes_per_call: Math.round(Number(stored?.body_bytes ?? 0) / calls),
    list_rollout_p50_ms: round(quantile(listed.slice(10), 0.5)),
    last_call_p50_ms: round(quantile(single.slice(10), 0.5)),
    load1: round(loadavg()[0], 1),
  });
}

/** A small chat call as the proxy records it (bodies as their JSON text), the k-th of its rollout. */
function smallCall(rolloutId: string, k: number): NewLlmCall {
  const text = (v: unknown) => new JsonText(JSON.stringify(v), v);
  const request = { model: 'toy', messages: [{ role: 'user', content: `throughput ${k % 7}` }] };
  const ids = Array.from({ length: 16 }, (_, i) => 100 + ((i * 7 + k) % 200));
  const answer = {
    id: `chatcmpl-${k}`,
    object: 'chat.completion',
    model: 'toy',
    choices: [{ index: 0, message: { role: 'assistant', content: 'a'.repeat(16) }, finish_reason: 'length' }],
    usage: { prompt_tokens: 20, completion_tokens: 16, total_tokens: 36 },
  };
  return {
    rollout_id: rolloutId,
    attempt_id: null,
    recording_id: null,
    wire_api: 'chat',
    stream: false,
    request: text(request),
    backend_request: text({ ...request, max_tokens: 16, return_token_ids: true, logprobs: true }),
    response: text(answer),
    prompt_ids: Array.from({ length: 20 }, (_, i) => i + 1),
    response_ids: ids,
    response_logprobs: ids.map((x) => -x / 1000),
    token_source: 'backend',
    bridge: null,
    finish_reason: 'length',
    usage: { prompt_tokens: 20, completion_tokens: 16 },
    model: 'toy',
    model_version: 0,
    backend: 'http://127.0.0.1:8000/v1',
    status: 'ok',
    error: null,
    http_status: 200,
    tags: [],
    queue_ms: 0,
    ttft_ms: null,
    total_ms: 1.2,
  };
}

async function smallCalls(store: Store, backend: string): Promise<void> {
  const rollout = await store.createRollout({ kind: 'standalone' });
  let k = 0;
  for (const group of [1, 20]) {
    // The first pass warms up (JIT, the store's statements); the figure is the median of the rest.
    const cpu: number[] = [];
    const wall: number[] = [];
    for (let pass = 0; pass < 6; pass++) {
      const batches = Array.from({ length: 2000 / group }, () =>
        Array.from({ length: group }, () => smallCall(rollout.id, k++)),
      );
      const c0 = process.cpuUsage();
      const t0 = performance.now();
      for (const b of batches) await store.recordLlmCalls(b);
      const used = process.cpuUsage(c0);
      if (pass === 0) continue;
      wall.push(((performance.now() - t0) * 1000) / 2000);
      cpu.push((used.user + used.system) / 2000);
    }
    emit('store.small', {
      backend,
      calls_per_transaction: group,
      cpu_us_per_call: round(quantile(cpu, 0.5), 1),
      wall_us_per_call: round(quantile(wall, 0.5), 1),
      load1: round(loadavg()[0], 1),
    });
  }
}

export default async function bench(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'hrl-bench-store-'));
  try {
    for (const backend of ['sqlite', 'postgres'] as const) {
      let spec = 'sqlite';
      let schema = '';
      if (backend === 'postgres') {
        const problem = await postgresProblem();
        if (problem) {
          for (const name of ['store.ingest', 'store.page', 'store.rollout', 'store.agent']) {
            emit(name, { backend, skipped: `PostgreSQL unreachable at ${PG_SHOWN}: ${problem}` });
          }
          continue;
        }
        schema = `bench_${randomBytes(5).toString('hex')}`;
        spec = pgSchemaUrl(schema);
      }
      // A fresh database per figure, so one figure's data does not skew the next.
      for (const [i, fn] of [ingest, paging, loadRollout, agentRollouts, smallCalls].entries()) {
        if (ONLY && ONLY !== `${backend}:${fn.name}`) continue;
        const dataDir = join(dir, `${backend}-${i}`);
        const figureSpec = schema ? spec.replace(schema, `${schema}_${i}`) : spec;
        const store = await openStore(figureSpec, dataDir);
        try {
          await fn(store, backend);
        } finally {
          await store.close();
          rmSync(dataDir, { recursive: true, force: true });
          if (schema) {
            await dropPgSchema(`${schema}_${i}`);
          }
        }
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
