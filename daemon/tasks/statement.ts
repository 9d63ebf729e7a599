// The problem statement of a synthesised task. Without a model it is built from the failing tests'
// names and messages; with one (an OpenAI-compatible endpoint, e.g. the daemon's proxy) the model writes
// it from the same facts and STATEMENT_PROMPT. Neither ever sees the gold patch or the mutation.
import type { TestResult } from './run-tests';

export const STATEMENT_PROMPT = `You write the bug report a user would file for a failing test suite.
You are given the names of the tests that fail and their error messages; you are not given the code
change that caused them, and you must not guess at a fix. Write two to five sentences: what goes wrong,
observed versus expected behaviour where the messages show it. Plain text, no code fences, no preamble.`;

export interface StatementModel {
  /** The OpenAI-compatible base URL (…/v1). */
  baseURL: string;
  model: string;
  apiKey?: string;
}

const first = (message: string | undefined) => (message ?? 'failed').split('\n')[0]!.slice(0, 200);

/** The facts a statement is built from: each failing test and its message's first line. */
export function failingFacts(failToPass: string[], results: Map<string, TestResult>, limit = 8): string {
  const lines = failToPass.slice(0, limit).map((t) => `- ${t}: ${first(results.get(t)?.message)}`);
  if (failToPass.length > limit) lines.push(`- … and ${failToPass.length - limit} more`);
  return lines.join('\n');
}

export function statementFromTests(failToPass: string[], results: Map<string, TestResult>): string {
  const n = failToPass.length;
  return `${n === 1 ? 'A test fails' : `${n} tests fail`} that passed before:\n${failingFacts(failToPass, results)}\n\nFix the code so that ${n === 1 ? 'it passes' : 'they pass'} and the other tests keep passing.`;
}

/** The statement written by `model` from the failing tests (a rejection says why). */
export async function statementFromModel(
  model: StatementModel,
  failToPass: string[],
  results: Map<string, TestResult>,
  signal?: AbortSignal,
): Promise<string> {
  const response = await fetch(`${model.baseURL.replace(/\/$/, '')}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${model.apiKey ?? 'none'}` },
    body: JSON.stringify({
      model: model.model,
      messages: [
        { role: 'system', content: STATEMENT_PROMPT },
        { role: 'user', content: `Failing tests:\n${failingFacts(failToPass, results)}` },
      ],
      max_tokens: 400,
      temperature: 0.2,
    }),
    signal,
  });
  if (!response.ok)
    throw new Error(
      `the statement model answered ${response.status}: ${(await response.text()).slice(0, 200)}`,
    );
  const body = (await response.json()) as { choices?: { message?: { content?: string } }[] };
  const text = body.choices?.[0]?.message?.content?.trim();
  if (!text) throw new Error('the statement model answered no text');
  return text;
}
