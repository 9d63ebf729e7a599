// The rows of the pickers, pure: runs, recordings and evaluations under the names the views give them
// (an evolution's stored names shortened: labels.ts), with the stored name or id in the detail;
// rollouts finished first, each told apart from its group siblings (same task) by its reward, run,
// step and id.
import type { Recording, Rollout, Run } from '../../daemon/protocol/entities';
import type { Evaluation } from '../../daemon/protocol/evaluation';
import { evaluationLabel } from '../../webview/src/evalFormat';
import {
  evaluationRunName,
  recordingName,
  rolloutDescription,
  runDescription,
  runNames,
  startedAt,
  taskText,
} from './labels';

export interface PickRow {
  label: string;
  description: string;
  detail: string;
}

/** "started Dec 3 15:52", and the stored name where the label shortened it (it holds the evolution's id). */
function started(iso: string, stored: string, shown: string): string {
  return `started ${startedAt(iso)}${shown === stored ? '' : ` · ${stored}`}`;
}

/** The run picker (Open Run Dashboard, Stop Run, …): runs as the Runs view names them. */
export function runPicks(runs: readonly Run[]): (PickRow & { r: Run })[] {
  const names = runNames(runs);
  return runs.map((r) => ({
    label: names.get(r.id) ?? r.name,
    description: runDescription(r),
    detail: started(r.created_at, r.name, evaluationRunName(r.name)),
    r,
  }));
}

/** The recording picker (Rate, Export, Stop Recording…): recordings as the Recordings view names them. */
export function recordingPicks(recordings: readonly Recording[]): (PickRow & { r: Recording })[] {
  return recordings.map((r) => {
    const label = recordingName(r.name);
    return {
      label,
      description: r.status,
      detail: started(r.created_at, r.name, label),
      r,
    };
  });
}

/** An evaluation as its picker row names it: "candidate d43886f0b2 train · Dec 3 15:52". */
export function evaluationPickLabel(e: Pick<Evaluation, 'id' | 'name' | 'created_at'>): string {
  return evaluationLabel({ ...e, name: evaluationRunName(e.name) });
}

/** The evaluation picker (Open Evaluation, Compare Evaluations): the evaluation's id in the detail. */
export function evaluationPicks(evaluations: readonly Evaluation[]): (PickRow & { e: Evaluation })[] {
  return evaluations.map((e) => ({
    label: evaluationPickLabel(e),
    description: `${e.status} · ${e.split} · ${e.summary ? `mean ${e.summary.mean_reward?.toFixed(3) ?? '—'}` : ''}`,
    detail: e.id,
    e,
  }));
}

export interface RolloutPick extends PickRow {
  id: string;
}

const OPEN = new Set(['queued', 'running']);

/**
 * Open Trajectory's rows. `names`: run id → the name the Runs view shows (runNames);
 * `groupSteps`: group id → its step, where known.
 */
export function rolloutPicks(
  rollouts: readonly Rollout[],
  names: ReadonlyMap<string, string>,
  groupSteps: ReadonlyMap<string, number> = new Map(),
): RolloutPick[] {
  const finishedFirst = [...rollouts].sort((a, b) => Number(OPEN.has(a.status)) - Number(OPEN.has(b.status)));
  return finishedFirst.map((r) => {
    const step = r.group_id ? groupSteps.get(r.group_id) : undefined;
    const where = r.run_id
      ? `run ${names.get(r.run_id) ?? r.run_id}${step === undefined ? '' : ` · step ${step}`}`
      : r.kind;
    return {
      label: `${taskText(r.input) || `${r.kind} rollout`} · ${r.id.slice(-6)}`,
      description: `${rolloutDescription(r)} · ${where}`,
      detail: `started ${startedAt(r.created_at)}`,
      id: r.id,
    };
  });
}
