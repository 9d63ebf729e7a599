// The critic: sees a candidate's diff (and the brief's goal) and says accept or reject with a reason.
// Either a command (the diff on stdin; its last stdout line {"verdict": "accept"|"reject", "reason"})
// or one LLM call through the daemon's proxy with the prompt below; a reply with no verdict abstains.

import { errorText } from '../error-text';
import type { EvolveConfig, Verdict } from '../protocol/evolution';
import { runProcess } from '../worker/command';

export const CRITIC_PROMPT = `You review a change to an agent harness (the program around a language model: prompts, tools, control flow). The change was made to raise the harness's score on a set of training tasks.
Reject it if it is specific to those tasks rather than a general improvement: it hard-codes task inputs, answers or ids, routes on them, special-cases the benchmark, or weakens how answers are checked. Accept it if it is a general improvement a careful engineer would keep.
Answer with one line: ACCEPT: <reason> or REJECT: <reason>.

The change (unified diff):
`;

/** A verdict from a reply's text: the first ACCEPT or REJECT word decides. */
export function verdictOf(text: string): Verdict {
  const m = /\b(accept|reject)\b[:\s-]*(.*)/i.exec(text);
  if (!m)
    return {
      verdict: 'abstain',
      reason: `the critic gave no verdict: ${JSON.stringify(text.slice(0, 200))}`,
    };
  return { verdict: m[1]!.toLowerCase() as 'accept' | 'reject', reason: m[2]!.trim().slice(0, 500) || m[1]! };
}

export interface CriticContext {
  cwd?: string;
  /** OpenAI-compatible base URL and key of the proxy (a recording) for an LLM critic. */
  openai?: { baseUrl: string; key: string; model: string };
  signal: AbortSignal;
  timeoutMs: number;
}

export async function criticise(
  critic: EvolveConfig['critic'],
  diff: string,
  c: CriticContext,
): Promise<Verdict> {
  if (critic === false) return { verdict: 'off', reason: 'critic off' };
  const controller = new AbortController();
  const stop = () => controller.abort();
  c.signal.addEventListener('abort', stop, { once: true });
  const timer = setTimeout(stop, c.timeoutMs);
  try {
    if ('command' in critic) {
      const r = await runProcess(critic.command, {
        cwd: c.cwd,
        env: process.env,
        stdin: diff,
        signal: controller.signal,
      });
      const last = r.stdout.trim().split('\n').at(-1) ?? '';
      try {
        const parsed = JSON.parse(last) as { verdict?: unknown; reason?: unknown };
        if (parsed.verdict === 'accept' || parsed.verdict === 'reject')
          return { verdict: parsed.verdict, reason: String(parsed.reason ?? '') };
      } catch {}
      return r.code === 0
        ? verdictOf(last)
        : { verdict: 'abstain', reason: `the critic exited ${r.code}: ${r.stderr.slice(-300)}` };
    }
    if (!c.openai) return { verdict: 'abstain', reason: 'no endpoint for the LLM critic' };
    const res = await fetch(`${c.openai.baseUrl}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${c.openai.key}` },
      body: JSON.stringify({
        model: critic.model ?? c.openai.model,
        max_tokens: 200,
        messages: [{ role: 'user', content: `${critic.prompt ?? CRITIC_PROMPT}${diff}` }],
      }),
      signal: controller.signal,
    });
    if (!res.ok) return { verdict: 'abstain', reason: `the critic's call failed: HTTP ${res.status}` };
    const body = (await res.json()) as { choices?: { message?: { content?: string } }[] };
    return verdictOf(body.choices?.[0]?.message?.content ?? '');
  } catch (err) {
    return {
      verdict: 'abstain',
      reason: `the critic failed: ${errorText(err)}`,
    };
  } finally {
    clearTimeout(timer);
    c.signal.removeEventListener('abort', stop);
  }
}
