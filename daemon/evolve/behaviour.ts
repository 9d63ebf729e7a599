// What a candidate did, read from the store: per task the action sequence of each scored attempt (the
// tools its llm calls asked for, or "reply"), for novelty, and a fingerprint of its calls' tokens, to
// tell whether a candidate's trajectories (calls and outcome) differ from its parent's at all.
import { createHash } from 'node:crypto';
import type { LlmCall } from '../protocol/entities';
import type { EvalTaskResult } from '../protocol/evaluation';
import type { Store } from '../store/store';
import type { Behaviour } from './regularisers';

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The actions of one call: the tools its response calls (OpenAI chat/responses, Anthropic), else reply. */
export function actionsOf(call: Pick<LlmCall, 'response'>): string[] {
  const r = call.response;
  const names: string[] = [];
  if (isObj(r)) {
    const choices = Array.isArray(r.choices) ? r.choices : [];
    for (const c of choices) {
      const calls =
        isObj(c) && isObj(c.message) && Array.isArray(c.message.tool_calls) ? c.message.tool_calls : [];
      for (const t of calls) if (isObj(t) && isObj(t.function)) names.push(`tool:${String(t.function.name)}`);
    }
    const parts = [
      ...(Array.isArray(r.content) ? r.content : []),
      ...(Array.isArray(r.output) ? r.output : []),
    ];
    for (const p of parts)
      if (isObj(p) && (p.type === 'tool_use' || p.type === 'function_call'))
        names.push(`tool:${String(p.name)}`);
  }
  return names.length ? names : ['reply'];
}

export interface Trajectories {
  behaviour: Behaviour;
  /** Per task key, a hash of every scored attempt's calls (their token ids, else their bodies) and reward. */
  fingerprints: Map<string, string>;
}

export async function trajectoriesOf(store: Store, tasks: EvalTaskResult[]): Promise<Trajectories> {
  const behaviour: Behaviour = new Map();
  const fingerprints = new Map<string, string>();
  for (const t of tasks) {
    const h = createHash('sha256');
    const seqs: string[][] = [];
    for (const id of t.rollouts) {
      const calls = await store.listLlmCalls(id);
      seqs.push(calls.flatMap(actionsOf));
      for (const c of calls)
        h.update(JSON.stringify(c.prompt_ids ?? c.request)).update(
          JSON.stringify(c.response_ids ?? c.response),
        );
      // The outcome is part of the trajectory: a harness may change only what it makes of the replies.
      h.update(`|${(await store.getRollout(id))?.reward ?? 'none'}|`);
    }
    behaviour.set(t.key, seqs);
    fingerprints.set(t.key, h.digest('hex'));
  }
  return { behaviour, fingerprints };
}

/** Whether two candidates' trajectories are the same on every task both have. */
export function sameTrajectories(a: Trajectories, b: Trajectories): boolean {
  for (const [key, f] of a.fingerprints)
    if (b.fingerprints.has(key) && b.fingerprints.get(key) !== f) return false;
  return true;
}
