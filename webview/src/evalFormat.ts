// How the evaluation pages write intervals, durations and evaluation names. Pure.
import type { Evaluation } from '../../daemon/protocol/evaluation';
import { formatNumber } from './format';
import { evaluationRunName, startedAt } from './runLabels';

export type EvaluationRef = Pick<Evaluation, 'id' | 'name' | 'created_at'>;

/** "[0.25, 0.75]", or "—" where there is no interval. */
export function interval(low: number | null | undefined, high: number | null | undefined): string {
  return low === null || low === undefined || high === null || high === undefined
    ? '—'
    : `[${formatNumber(low)}, ${formatNumber(high)}]`;
}

/** "4.2 s", "3 min 5 s", "1 h 2 min". */
export function seconds(s: number): string {
  if (s < 60) return `${formatNumber(s, 3)} s`;
  const m = Math.floor(s / 60);
  return m < 60 ? `${m} min ${Math.round(s % 60)} s` : `${Math.floor(m / 60)} h ${m % 60} min`;
}

/** "math-agent · Dec 3 15:52": evaluations of one config differ by when they ran (a candidate's named as in the views). */
export function evaluationLabel(e: EvaluationRef): string {
  return `${evaluationRunName(e.name)} · ${startedAt(e.created_at)}`;
}

/** "+12.5 %" / "−3 %" / "—": a relative change. */
export function percent(change: number | null): string {
  if (change === null) return '—';
  const p = formatNumber(change * 100, 3);
  return `${change > 0 ? '+' : ''}${p} %`;
}

/** Tokens to one decimal (a mean over attempts): "253.8", "189". */
export function tokens(x: number | null | undefined): string {
  return x === null || x === undefined ? '—' : formatNumber(Math.round(x * 10) / 10, 15);
}
