// A step's rollouts by status, counted and said in words (pure: the host counts, the dashboard shows).
import type { RolloutStatus } from '../../daemon/protocol/entities';
import { formatNumber } from './format';
import type { StepProgress } from './protocol';

/** Counts a step's rollouts by status. */
export function countStep(runId: string, step: number, statuses: readonly RolloutStatus[]): StepProgress {
  const n = (s: RolloutStatus) => statuses.filter((x) => x === s).length;
  const queued = n('queued');
  const running = n('running');
  return {
    run_id: runId,
    step,
    total: statuses.length,
    queued,
    running,
    finished: statuses.length - queued - running,
    failed: n('failed'),
  };
}

/** "step 3: 5 of 8 rollouts finished · 2 running · 1 queued" (failed ones named when any). */
export function progressText(p: StepProgress): string {
  const parts = [`step ${p.step}: ${formatNumber(p.finished)} of ${formatNumber(p.total)} rollouts finished`];
  if (p.failed) parts.push(`${formatNumber(p.failed)} failed`);
  if (p.running) parts.push(`${formatNumber(p.running)} running`);
  if (p.queued) parts.push(`${formatNumber(p.queued)} queued`);
  return parts.join(' · ');
}
