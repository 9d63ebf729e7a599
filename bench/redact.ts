// The redactor's CPU per call as the store runs it (daemon/store/redact-call.ts): the small fields,
// then the request, backend request and answer texts (the request's shared prefix with the chain's
// base skipped), then, where something may be a secret, the bodies redacted. The least CPU time of
// many short rounds: on a shared machine, contention only adds to it.
//   redact.call  small_us: a small chat call; agent_first_us: an agent's first call of an attempt
//                (a ~48 KB request, nothing shared); agent_next_us: the next call, sharing all but
//                its last turn; secret_us: a small call whose prompt holds a key (redacted);
//                clean_scan_us_per_48kb: the no-secret scan alone over 48 KB of agent JSON
import { loadavg } from 'node:os';
import type { NewLlmCall } from '../daemon/protocol/entities';
import { mayHoldSecret } from '../daemon/redact';
import { JsonText } from '../daemon/store/json-text';
import { bodiesNeedRedaction, redactBodies, redactFields } from '../daemon/store/redact-call';
import { agentMessages, agentTools } from './agent-request';
import { emit, round } from './emit';

const json = (v: unknown) => new JsonText(JSON.stringify(v), v);

function callOf(request: object, shared: number): { call: NewLlmCall; shared: number } {
  const backend = { ...request, return_token_ids: true, logprobs: true };
  const response = {
    id: 'chatcmpl-7f3a9c2e',
    object: 'chat.completion',
    created: 1765000000,
    model: 'qwen3-4b',
    choices: [
      {
        index: 0,
        message: { role: 'assistant', content: 'I will read src/parser.ts first, then run the tests.' },
        finish_reason: 'stop',
      },
    ],
    usage: { prompt_tokens: 12034, completion_tokens: 16, total_tokens: 12050 },
  };
  const call = {
    rollout_id: 'ro_01JF3Z8Q2W',
    attempt_id: 'at_01JF3Z8Q2X',
    wire_api: 'chat',
    stream: false,
    request: json(request),
    backend_request: json(backend),
    response: json(response),
    prompt_ids: null,
    response_ids: null,
    token_source: 'backend',
    bridge: { bridged: false, reason: 'no bridge' },
    finish_reason: 'stop',
    usage: response.usage,
    model: 'qwen3-4b',
    backend: 'http://127.0.0.1:8000/v1',
    status: 'ok',
    error: null,
    tags: ['bench'],
  } as unknown as NewLlmCall;
  return { call, shared };
}

/** An agent's request: a system prompt, 8 tools and `turns` tool calls with their results. */
function agentRequest(turns: number): { model: string; messages: object[]; tools: object[] } {
  const tools = agentTools({ path: { type: 'string' } });
  const messages = agentMessages(turns, (i) =>
    `export function f${i}(a: string, b: number) {\n  return a.repeat(b) + "\\t";\n}\n`.repeat(14),
  );
  return { model: 'qwen3-4b', messages, tools };
}

/** What the store does with a call before writing it, the chain comparison aside. */
function redactCall(call: NewLlmCall, shared: number): NewLlmCall {
  const c = redactFields(call);
  const texts = {
    request: (c.request as JsonText).text,
    backend: (c.backend_request as JsonText).text,
  };
  const s = shared > 0 ? { request: shared, backend: shared } : null;
  return bodiesNeedRedaction(c, texts, s) ? redactBodies(c) : c;
}

const cpuUs = () => {
  const u = process.cpuUsage();
  return u.user + u.system;
};

/** The least CPU µs per run of `f` over rounds of `n` runs. */
function measure(f: () => void, n: number, rounds: number): number {
  let least = Number.POSITIVE_INFINITY;
  for (let r = 0; r < 3 + rounds; r++) {
    const t0 = cpuUs();
    for (let i = 0; i < n; i++) f();
    if (r >= 3) least = Math.min(least, (cpuUs() - t0) / n);
  }
  return least;
}

export default async function main(): Promise<void> {
  const rounds = Number(process.env.BENCH_ROUNDS ?? 40);
  const small = callOf(
    { model: 'qwen3-4b', messages: [{ role: 'user', content: 'hello there' }], max_tokens: 16 },
    0,
  );
  const secret = callOf(
    {
      model: 'qwen3-4b',
      messages: [{ role: 'user', content: 'use OPENAI_API_KEY=sk-proj-A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6' }],
    },
    0,
  );
  let turns = 1;
  while (JSON.stringify(agentRequest(turns)).length < 48 * 1024) turns++;
  const before = JSON.stringify(agentRequest(turns - 1));
  const first = callOf(agentRequest(turns), 0);
  // The next call shares what the one before sent but its closing brackets.
  const next = callOf(agentRequest(turns), before.length - 40);
  const agentText = (first.call.request as JsonText).text;
  for (const c of [small, secret, first, next]) {
    const out = redactCall(c.call, c.shared);
    if ((out.request !== c.call.request) !== (c === secret)) throw new Error('unexpected redaction');
  }
  emit('redact.call', {
    small_us: round(
      measure(() => redactCall(small.call, 0), 2000, rounds),
      2,
    ),
    agent_first_us: round(
      measure(() => redactCall(first.call, 0), 100, rounds),
      2,
    ),
    agent_next_us: round(
      measure(() => redactCall(next.call, next.shared), 500, rounds),
      2,
    ),
    secret_us: round(
      measure(() => redactCall(secret.call, 0), 1000, rounds),
      2,
    ),
    clean_scan_us_per_48kb: round(
      (measure(() => mayHoldSecret(agentText), 40, rounds) * 48 * 1024) / agentText.length,
      2,
    ),
    agent_request_bytes: agentText.length,
    rounds,
    load: round(loadavg()[0], 1),
  });
}
