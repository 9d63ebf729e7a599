// "Export Recording…": a recorded session as training samples (token ids where the upstream gave
// them) or as a task line for a run's tasks JSONL (the prompt the session started from).
import type { RolloutDetail } from '../../daemon/protocol/api';
import { answered, type LlmCall, type Recording } from '../../daemon/protocol/entities';
import { samplesJsonl } from './export';

/**
 * Samples JSONL of the recording's rollout, built with the default algorithm settings (pure). A person
 * who exports one recording asks for its calls: an imported session's (token_source "import", text the
 * model never sampled) are included here, as SFT-style data, and nowhere they were not asked for.
 */
export function recordingSamples(detail: RolloutDetail): { text: string; samples: number } {
  return samplesJsonl(null, [detail], { imported: true });
}

const ASSISTANT_ROLES = new Set(['assistant', 'model']);

/** The items of a messages/input list before the first assistant turn: what the person asked. */
function opening(items: unknown): unknown[] | null {
  if (typeof items === 'string') return [{ role: 'user', content: items }];
  if (!Array.isArray(items)) return null;
  const out: unknown[] = [];
  for (const item of items) {
    const role = (item as { role?: unknown } | null)?.role;
    const type = (item as { type?: unknown } | null)?.type;
    if (typeof role === 'string' && ASSISTANT_ROLES.has(role)) break;
    if (type === 'function_call' || type === 'reasoning') break;
    out.push(item);
  }
  return out.length > 0 ? out : null;
}

/**
 * The task a recording turns into: its first main (not side, not failed) call's opening prompt, in
 * the wire format the agent spoke, with where it came from and the reward it got (pure).
 */
export function recordingTask(recording: Recording, detail: RolloutDetail): Record<string, unknown> | null {
  const first = [...detail.llm_calls]
    .sort((a, b) => a.seq - b.seq)
    .find((c: LlmCall) => answered(c.status) && !c.tags.includes('side'));
  if (!first || typeof first.request !== 'object' || first.request === null) return null;
  const request = first.request as Record<string, unknown>;
  const prompt = opening(request.messages ?? request.input);
  if (!prompt) return null;
  const system = request.system ?? request.instructions;
  return {
    wire_api: first.wire_api,
    ...(system === undefined ? {} : { system }),
    messages: prompt,
    source: { recording_id: recording.id, name: recording.name, rollout_id: recording.rollout_id },
    reward: detail.reward,
  };
}
