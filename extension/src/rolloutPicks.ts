// The rows of Open Trajectory's picker, pure: finished rollouts first, each row told apart from its
// group siblings (same task) by its reward, run, step and id.
import type { Rollout } from '../../daemon/protocol/entities';
import { rolloutDescription, startedAt, taskText } from './labels';

export interface RolloutPick {
  label: string;
  description: string;
  detail: string;
  id: string;
}

const OPEN = new Set(['queued', 'running']);

/** `runNames`: run id → the name the sidebar shows; `groupSteps`: group id → its step, where known. */
export function rolloutPicks(
  rollouts: readonly Rollout[],
  runNames: ReadonlyMap<string, string>,
  groupSteps: ReadonlyMap<string, number> = new Map(),
): RolloutPick[] {
  const finishedFirst = [...rollouts].sort((a, b) => Number(OPEN.has(a.status)) - Number(OPEN.has(b.status)));
  return finishedFirst.map((r) => {
    const step = r.group_id ? groupSteps.get(r.group_id) : undefined;
    const where = r.run_id
      ? `run ${runNames.get(r.run_id) ?? r.run_id}${step === undefined ? '' : ` · step ${step}`}`
      : r.kind;
    return {
      label: `${taskText(r.input) || `${r.kind} rollout`} · ${r.id.slice(-6)}`,
      description: `${rolloutDescription(r)} · ${where}`,
      detail: `started ${startedAt(r.created_at)}`,
      id: r.id,
    };
  });
}
