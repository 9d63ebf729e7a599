// What a person should know about a running run's workers, in words (the status bar and the dashboard
// say the same). Pure: the extension's unit tests and the dashboard bundle both use it.
import type { RunWorkers } from '../../daemon/protocol/entities';

export interface WorkersNote {
  /** Nothing runs the run's rollouts now: show a warning instead of progress. */
  waiting: boolean;
  /** A few words for the status bar. */
  short: string;
  /** A sentence for tooltips and the dashboard (Markdown-ish: the command in backticks). */
  detail: string;
  /** The command that attaches a worker, when one is needed. */
  command: string | null;
}

/** The note for a running run (null: workers are attached, nothing to say). */
export function describeWorkers(w: RunWorkers | undefined): WorkersNote | null {
  if (!w) return null;
  const count = w.workers.length;
  if (w.mode === 'ray' && w.ray) {
    const job =
      `Ray job ${w.ray.job_id ?? '(not submitted yet)'} ${w.ray.status ?? ''} at ${w.ray.address}`.trim();
    if (count > 0)
      return {
        waiting: false,
        short: '',
        detail: `Rollouts run on ${count} Ray worker${count === 1 ? '' : 's'} (${job}).`,
        command: null,
      };
    if (w.error) return { waiting: true, short: 'Ray workers not running', detail: w.error, command: null };
    return { waiting: false, short: '', detail: `${job}: its workers are starting.`, command: null };
  }
  if (count > 0) {
    const own = w.workers.filter((x) => x.daemon).length;
    const label =
      own === count
        ? `the daemon's worker`
        : `${count} worker${count === 1 ? '' : 's'}${own ? ` (${own} the daemon's)` : ''}`;
    return { waiting: false, short: '', detail: `Rollouts run on ${label}.`, command: null };
  }
  if (w.error) return { waiting: true, short: 'worker restarting', detail: w.error, command: null };
  if (w.mode === 'daemon' && w.last_seen_at === null)
    return { waiting: false, short: '', detail: 'The daemon is starting its workers.', command: null };
  const gone = w.last_seen_at !== null;
  return {
    waiting: true,
    short: gone ? 'no worker' : 'waiting for a worker',
    detail: `${gone ? 'The last worker went away. ' : ''}Waiting for a worker: run \`${w.command}\``,
    command: w.command,
  };
}
