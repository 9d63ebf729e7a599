// The proxy's parse of a whole (non-streamed) answer from fake-vllm, asked for token ids and logprobs
// as the proxy asks:
//   proxy.answer_parse  us_per_answer: what the proxy runs (answer-scan.ts); parsed_us_per_answer:
//                       JSON.parse of the whole text (bounded, as parseBackendJson)
// Chat answers the harness sees without logprob entries (parseChatAnswer: entries scanned to their
// logprob): `small` (a few tokens, a short prompt: parsed whole), `agent` (~12k prompt ids, a short
// answer: parsed whole) and `long` (1,000 answer tokens); and `bridged`, the /v1/completions answer
// to a bridged agent call, whose ~12k prompt ids vLLM echoes (parseWithoutPromptIds: not parsed); and
// `agent_next`, the answer to the agent's next turn on a native rollout, whose prompt ids continue the
// last answer's (prompt-ids.ts: only the ids after them parsed).
// CPU time of this process, median over alternating rounds.
import { loadavg } from 'node:os';
import { parseChatAnswer, parseWithoutPromptIds } from '../daemon/proxy/answer-scan';
import { parseBackendJson } from '../daemon/proxy/json';
import { PromptIdsMemo } from '../daemon/proxy/prompt-ids';
import { child, emit, quantile, root, round } from './emit';

const FAKE = `
import { startFakeVllm } from '${root}test/fixtures/fake-vllm.ts';
const f = await startFakeVllm({ model: 'toy' });
process.stdout.write(JSON.stringify({ url: f.url }) + '\\n');
`;

async function answerOf(
  url: string,
  prompt: string | number[] | object[],
  maxTokens: number,
): Promise<string> {
  const asked = { model: 'toy', max_tokens: maxTokens, return_token_ids: true, logprobs: true };
  const bridged = Array.isArray(prompt) && typeof prompt[0] === 'number';
  const messages = Array.isArray(prompt) ? prompt : [{ role: 'user', content: prompt }];
  const res = await fetch(`${url}/${bridged ? 'completions' : 'chat/completions'}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(bridged ? { ...asked, prompt, logprobs: 1 } : { ...asked, messages }),
  });
  if (!res.ok) throw new Error(`fake-vllm answered ${res.status}`);
  return res.text();
}

const cpuUs = () => {
  const u = process.cpuUsage();
  return u.user + u.system;
};

/** µs of CPU per parse of `text`, over enough repetitions to measure. */
function timeOf(parse: (text: string) => unknown, text: string): number {
  const n = Math.max(20, Math.floor(2_000_000 / text.length));
  const t0 = cpuUs();
  for (let i = 0; i < n; i++) parse(text);
  return (cpuUs() - t0) / n;
}

/** An agent's next turn (its last answer and a tool result appended): the answer and the proxy's parse of it. */
async function nextTurn(url: string): Promise<[string, (text: string) => unknown]> {
  const first = [{ role: 'user', content: 'tool result line\n'.repeat(700) }];
  const last = parseBackendJson(await answerOf(url, first, 64));
  const next = [
    ...first,
    last?.choices[0].message,
    { role: 'user', content: 'another tool result\n'.repeat(50) },
  ];
  const text = await answerOf(url, next, 64);
  const ids = last?.prompt_token_ids as number[];
  const list = ids.join(',');
  const memo = new PromptIdsMemo();
  return [
    text,
    (t: string) => {
      memo.keep('r', list, ids);
      return memo.parse('r', t, parseChatAnswer);
    },
  ];
}

export default async function main(): Promise<void> {
  const fake = await child(FAKE);
  let cases: [string, string, (text: string) => unknown][];
  try {
    const agentIds = Array.from({ length: 12_000 }, (_, i) => 300 + (i % 200));
    cases = [
      ['small', await answerOf(fake.info.url, 'hi', 8), parseChatAnswer],
      ['agent', await answerOf(fake.info.url, 'tool result line\n'.repeat(700), 64), parseChatAnswer],
      ['long', await answerOf(fake.info.url, 'x'.repeat(1000), 1000), parseChatAnswer],
      ['bridged', await answerOf(fake.info.url, agentIds, 64), parseWithoutPromptIds],
      ['agent_next', ...(await nextTurn(fake.info.url))],
    ];
  } finally {
    fake.proc.kill();
  }
  const rounds = Number(process.env.BENCH_ROUNDS ?? 40);
  const times = cases.map(() => ({ scan: [] as number[], parsed: [] as number[] }));
  for (let i = 0; i < 10 + rounds; i++)
    for (const [k, [, text, parse]] of cases.entries()) {
      const scan = timeOf(parse, text);
      const parsed = timeOf(parseBackendJson, text);
      if (i < 10) continue;
      times[k].scan.push(scan);
      times[k].parsed.push(parsed);
    }
  for (const [k, [name, text]] of cases.entries()) {
    const json = parseBackendJson(text);
    const scan = quantile(times[k].scan, 0.5);
    const parsed = quantile(times[k].parsed, 0.5);
    emit('proxy.answer_parse', {
      case: name,
      bytes: text.length,
      prompt_tokens: (json?.prompt_token_ids ?? json?.choices?.[0]?.prompt_token_ids)?.length ?? null,
      response_tokens: json?.choices?.[0]?.token_ids?.length ?? null,
      us_per_answer: round(scan, 1),
      parsed_us_per_answer: round(parsed, 1),
      speedup: round(parsed / scan, 2),
      loadavg_1m: round(loadavg()[0], 2),
    });
  }
}
