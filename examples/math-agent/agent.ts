// A two-turn "math agent" harness that talks to any OpenAI-compatible endpoint with the official client.
// Turn 1: the user asks a one-digit arithmetic question; the model answers.
// Turn 2: the harness checks the answer with a "calculator", tells the model what it says, and asks
// again; the model gives its final answer. The full history is resent on every call.
// Reward (verifiable, in [0, 1]): 0.3 · score(first answer) + 0.7 · score(final answer), where score
// compares the answer (plus its end-of-turn) with the expected digits position by position.
import OpenAI from 'openai';
import { z } from 'zod';

export const MathTask = z.object({
  id: z.string(),
  a: z.number().int().min(0).max(9),
  b: z.number().int().min(0).max(9),
  op: z.enum(['+', '-']),
  answer: z.number().int(),
});
export type MathTask = z.infer<typeof MathTask>;

/** Tokens each answer may use: a digit and the end of the turn; a little room to ramble. */
export const MAX_ANSWER_TOKENS = 4;

export function question(t: MathTask): string {
  return `${t.a}${t.op}${t.b}=?`;
}

export function feedback(t: MathTask, firstAnswer: string): string {
  const right = firstAnswer.trim() === String(t.answer);
  return `${right ? 'right' : 'no'}, the calculator says ${t.answer}`;
}

const END = '\u{E000}';

/**
 * Shaped, verifiable score of one answer: the answer's characters followed by an end marker (when the
 * model ended its turn) are compared position by position with the expected digits + end marker:
 * an exact character counts 1, a wrong digit where a digit belongs 0.3; divided by the longer length.
 * "7" (ended) for 7 scores 1; "4" (ended) 0.65; "7xyz" (cut off) 0.25; random bytes ≈ 0.
 */
export function scoreAnswer(text: string, ended: boolean, answer: number): number {
  const got = [...text.trim()];
  if (ended) got.push(END);
  const want = [...String(answer), END];
  const n = Math.max(got.length, want.length);
  let s = 0;
  for (let i = 0; i < Math.min(got.length, want.length); i++) {
    if (got[i] === want[i]) s += 1;
    else if (/^\d$/.test(got[i]) && /^\d$/.test(want[i])) s += 0.3;
  }
  return s / n;
}

export interface RolloutEnv {
  baseURL: string;
  apiKey: string;
  model: string;
  task: unknown;
  seed?: number;
}

export interface RolloutResult {
  reward: number;
  turns: number;
  /** the final answer (for logs and tests) */
  answer?: string;
  correct?: boolean;
}

export async function runRollout(env: RolloutEnv): Promise<RolloutResult> {
  const task = MathTask.parse(env.task);
  const client = new OpenAI({ baseURL: env.baseURL, apiKey: env.apiKey, maxRetries: 2 });
  const messages: OpenAI.Chat.ChatCompletionMessageParam[] = [{ role: 'user', content: question(task) }];
  const ask = async (turn: number) => {
    const r = await client.chat.completions.create({
      model: env.model,
      messages,
      max_tokens: MAX_ANSWER_TOKENS,
      temperature: 1,
      ...(env.seed !== undefined ? { seed: env.seed * 2 + turn } : {}),
    });
    const choice = r.choices[0];
    return { text: choice?.message.content ?? '', ended: choice?.finish_reason === 'stop' };
  };
  const first = await ask(0);
  // Send the answer back exactly as received (no trimming), so the history stays token-exact.
  messages.push(
    { role: 'assistant', content: first.text },
    { role: 'user', content: feedback(task, first.text) },
  );
  const final = await ask(1);
  const reward =
    0.3 * scoreAnswer(first.text, first.ended, task.answer) +
    0.7 * scoreAnswer(final.text, final.ended, task.answer);
  return {
    reward,
    turns: 2,
    answer: final.text,
    correct: final.ended && final.text.trim() === String(task.answer),
  };
}
