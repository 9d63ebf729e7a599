// The proxy bench's client side: the calls each phase makes against a target (sequential timed calls,
// clients back to back for a while, streamed calls, agent conversations), over one keep-alive agent.
import { Agent } from 'node:http';
import { agentMessages, agentTools } from '../agent-request';
import { chat, post, postJson, type Target } from '../client';

export const agent = new Agent({ keepAlive: true, maxSockets: 256 });

const call = (t: Target, path: string, body: object) => post(agent, t.base + path, t.key, body);

export interface Rate {
  rate: number;
  calls: number;
  tokens: number;
}

/** Sequential calls, alternating between the targets so drift (GC, other load) hits all alike. */
export async function latencies(targets: Target[], n: number, body: object, pick: 'first' | 'total') {
  const out: number[][] = targets.map(() => []);
  for (let i = 0; i < n; i++)
    for (const [k, t] of targets.entries()) {
      const r = await call(t, '/chat/completions', body);
      out[k].push(pick === 'first' ? r.firstMs : r.totalMs);
    }
  return out;
}

/** `concurrency` clients posting `body` back to back for `ms`. */
export async function throughput(t: Target, concurrency: number, ms: number, body: object): Promise<Rate> {
  let done = 0;
  const end = performance.now() + ms;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < end) {
        await call(t, '/chat/completions', body);
        done++;
      }
    }),
  );
  return { rate: done / (ms / 1000), calls: done, tokens: 0 };
}

/**
 * An agent's call mid-task: a system prompt, 8 tools and 12 turns of tool calls and results, ~12 KB
 * of JSON (the toy tokenizer is byte-level: ~12k prompt ids back from the backend).
 */
export function agentCall(): object {
  const tools = agentTools({
    path: { type: 'string', description: 'a path in the workspace' },
    line: { type: 'integer' },
  });
  const messages = agentMessages(6, (i) => `export const line${i} = ${i};\n`.repeat(40));
  return { model: 'toy', messages, tools, max_tokens: 16 };
}

/** `concurrency` clients streaming long answers back to back for `ms`: content tokens/s. */
export async function streamRate(t: Target, concurrency: number, ms: number): Promise<Rate> {
  let tokens = 0;
  let calls = 0;
  const t0 = performance.now();
  const end = t0 + ms;
  const long = 'x'.repeat(1000);
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < end) {
        const r = await call(t, '/chat/completions', chat(long, { max_tokens: 2000, stream: true }));
        tokens += r.tokens;
        calls++;
      }
    }),
  );
  return { rate: tokens / ((performance.now() - t0) / 1000), calls, tokens };
}

/**
 * An agent's conversation, over and over until `end`: 12 turns, each resending the history with the
 * last answer and a tool result appended (the bridge reuses the sampled tokens when it may). The calls made.
 */
export async function converse(t: Target, end: number): Promise<number> {
  let calls = 0;
  while (performance.now() < end) {
    const messages: object[] = [
      { role: 'system', content: 'You are a careful coding agent. '.repeat(40) },
      { role: 'user', content: 'Fix the failing test in src/parser.ts.' },
    ];
    for (let turn = 0; turn < 12 && performance.now() < end; turn++) {
      const answer = await postJson(agent, `${t.base}/chat/completions`, t.key, {
        model: 'toy',
        messages,
        max_tokens: 16,
      });
      calls++;
      messages.push(
        { role: 'assistant', content: answer.choices[0].message.content },
        { role: 'user', content: `export const line${turn} = ${turn};\n`.repeat(40) },
      );
    }
  }
  return calls;
}
