// A retrieval agent over any OpenAI-compatible endpoint (official client, Chat Completions tools): it
// answers a question about the corpus shipped here, calling `search` (BM25, search.ts) as often as it
// likes, until it answers without a tool call or the turns run out. Reward: the answer's token F1
// against the task's gold answers (score.ts).
import OpenAI from 'openai';
import { z } from 'zod';
import type { RolloutEnv } from '../command';
import { score } from './score';
import { Bm25, loadCorpus } from './search';

export const RetrievalTask = z.object({
  id: z.string(),
  question: z.string(),
  answers: z.array(z.string()).min(1),
});
export type RetrievalTask = z.infer<typeof RetrievalTask>;

export const SEARCH_TOOL: OpenAI.Chat.ChatCompletionTool = {
  type: 'function',
  function: {
    name: 'search',
    description: 'Search the guide to the island of Varnholm; returns the best three passages.',
    parameters: {
      type: 'object',
      properties: { query: { type: 'string', description: 'keywords' } },
      required: ['query'],
    },
  },
};

const SearchArgs = z.object({ query: z.string() });
let index: Bm25 | undefined;

/** The `search` tool's answer to a call's arguments (what the model reads back). */
export function search(argsJson: string): { ok: boolean; result: string } {
  let query: string;
  try {
    query = SearchArgs.parse(JSON.parse(argsJson)).query;
  } catch {
    return { ok: false, result: 'error: search takes {"query": "keywords"}' };
  }
  index ??= new Bm25(loadCorpus());
  const hits = index.search(query);
  const result = hits.map((h) => `[${h.doc.id}] ${h.doc.title}: ${h.doc.text}`).join('\n');
  return { ok: true, result: result || 'no passage matches' };
}

export const prompt = (task: RetrievalTask) =>
  `${task.question}\nSearch the guide to find out, then reply with the answer only.`;

export interface RolloutResult {
  reward: number;
  exact: boolean;
  answer: string;
  turns: number;
  searches: string[];
}

export async function runRollout(env: RolloutEnv): Promise<RolloutResult> {
  const task = RetrievalTask.parse(env.task);
  const client = new OpenAI({ baseURL: env.baseURL, apiKey: env.apiKey, maxRetries: 2 });
  const messages: OpenAI.Chat.ChatCompletionMessageParam[] = [{ role: 'user', content: prompt(task) }];
  const searches: string[] = [];
  let answer = '';
  let turns = 0;
  while (turns < (env.maxTurns ?? 4)) {
    turns++;
    const r = await client.chat.completions.create({
      model: env.model,
      messages,
      tools: [SEARCH_TOOL],
      max_tokens: env.maxTokens ?? 256,
    });
    const message = r.choices[0]?.message;
    const calls = (message?.tool_calls ?? []).filter((c) => c.type === 'function');
    answer = message?.content ?? '';
    // The assistant turn goes back exactly as received, so the history stays token-exact.
    messages.push({
      role: 'assistant',
      content: message?.content ?? null,
      ...(calls.length ? { tool_calls: calls } : {}),
    });
    if (calls.length === 0) break;
    for (const c of calls) {
      const { result } =
        c.function.name === 'search'
          ? search(c.function.arguments)
          : { result: `no tool named ${c.function.name}` };
      searches.push(c.function.arguments);
      messages.push({ role: 'tool', tool_call_id: c.id, content: result });
    }
  }
  const s = score(answer, task.answers);
  return { reward: s.f1, exact: s.exact, answer, turns, searches };
}
