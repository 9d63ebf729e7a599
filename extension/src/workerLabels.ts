// What the Nodes view shows of a running run's workers (Ray or attached): the run's row, its Ray nodes
// with their workers, and each worker's recent attempts. No vscode import: unit tested (workerLabels.test.ts).
import type { Attempt, Run, RunWorkers } from '../../daemon/protocol/entities';
import { statusIcon } from './labels';
import { ago } from './nodeLabels';

/** A worker a Ray job runs is named `ray:<node ip>:<node id>:w<i>` (workers/python/harness_rl_worker/ray_job.py). */
export function rayWorkerPlace(name: string): { ip: string; node: string; index: number } | null {
  const m = /^ray:(.+):([^:]+):w(\d+)$/.exec(name);
  return m ? { ip: m[1]!, node: m[2]!, index: Number(m[3]) } : null;
}

/** Whether the run's workers belong in the Nodes view: on Ray, or attached from elsewhere. */
export function showsWorkers(w: RunWorkers): boolean {
  return w.mode === 'ray' || w.workers.some((x) => !x.daemon);
}

export interface WorkerRow {
  id: string;
  label: string;
  description: string;
  tooltip: string;
  name: string;
}
export interface PlaceRow {
  id: string;
  label: string;
  description: string;
  tooltip: string;
  workers: WorkerRow[];
}
export interface RunWorkersRow {
  id: string;
  label: string;
  description: string;
  tooltip: string;
  /** codicon id */
  icon: string;
  places: PlaceRow[];
}

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;

/** A run's "Workers" row: the run, its Ray job and status, then its workers by Ray node (or "attached"). */
export function runWorkersRow(run: Pick<Run, 'id' | 'name'>, w: RunWorkers, now = Date.now()): RunWorkersRow {
  const places = new Map<string, PlaceRow>();
  const sorted = [...w.workers].sort((a, b) => a.name.localeCompare(b.name, undefined, { numeric: true }));
  for (const worker of sorted) {
    const at = rayWorkerPlace(worker.name);
    const key = at ? `ray:${at.ip}:${at.node}` : worker.daemon ? 'daemon' : 'attached';
    let place = places.get(key);
    if (!place) {
      place = {
        id: `workers:${w.run_id}:${key}`,
        label: at ? at.ip : key === 'daemon' ? 'the daemon' : 'attached',
        description: '',
        tooltip: at
          ? `Ray node ${at.node} at ${at.ip}`
          : key === 'daemon'
            ? "the daemon's own workers"
            : 'workers attached with `harness-rl worker` or an SDK',
        workers: [],
      };
      places.set(key, place);
    }
    const seenMs = now - Date.parse(worker.last_seen);
    place.workers.push({
      id: `worker:${w.run_id}:${worker.name}`,
      label: at ? `w${at.index}` : worker.name,
      description: Number.isNaN(seenMs) ? '' : `seen ${ago(seenMs)}`,
      tooltip: `${worker.name}\n\nlast claim or heartbeat ${worker.last_seen}`,
      name: worker.name,
    });
  }
  for (const p of places.values()) p.description = plural(p.workers.length, 'worker');

  const parts: string[] = [];
  if (w.ray)
    parts.push(`Ray job ${w.ray.job_id ?? '(not submitted)'}`, (w.ray.status ?? 'unknown').toLowerCase());
  parts.push(plural(w.workers.length, 'worker'));
  const rayNodes = [...places.keys()].filter((k) => k.startsWith('ray:')).length;
  if (rayNodes) parts.push(plural(rayNodes, 'node'));
  if (w.error) parts.push(w.error.split('\n')[0]!);

  const tooltip = [
    `**${run.name}** (\`${run.id}\`): workers ${w.mode === 'ray' ? 'on Ray' : 'attached'}`,
    w.ray ? `Ray at \`${w.ray.address}\`, job \`${w.ray.job_id ?? '—'}\`: ${w.ray.status ?? 'unknown'}` : '',
    w.last_seen_at ? `a worker last seen ${w.last_seen_at}` : 'no worker seen yet',
    `attach one more: \`${w.command}\``,
    w.error ? `**Error:** ${w.error}` : '',
  ].filter(Boolean);
  const bad = w.error || /FAILED|STOPPED/.test(w.ray?.status ?? '');
  return {
    id: `workers:${w.run_id}`,
    label: `Workers · ${run.name}`,
    description: parts.join(' · '),
    tooltip: tooltip.join('\n\n'),
    icon: bad ? 'warning' : w.mode === 'ray' ? 'cloud' : 'plug',
    places: [...places.values()],
  };
}

export interface AttemptRow {
  id: string;
  attemptId: string;
  label: string;
  description: string;
  tooltip: string;
  /** codicon id */
  icon: string;
}

/** How many attempts each worker row lists (the newest first). */
export const RECENT_ATTEMPTS = 5;

/** The newest attempts of each worker among `attempts`, at most `max` each. */
export function attemptsByWorker(attempts: Attempt[], max = RECENT_ATTEMPTS): Map<string, Attempt[]> {
  const by = new Map<string, Attempt[]>();
  const newest = [...attempts].sort((a, b) => b.started_at.localeCompare(a.started_at));
  for (const a of newest) {
    if (!a.worker) continue;
    const list = by.get(a.worker) ?? [];
    if (list.length < max) list.push(a);
    by.set(a.worker, list);
  }
  return by;
}

export function attemptRow(a: Attempt, now = Date.now()): AttemptRow {
  const parts: string[] = [a.status];
  if (a.failure) parts.push(`${a.failure.kind}: ${a.failure.reason}`);
  const startedMs = now - Date.parse(a.started_at);
  if (!Number.isNaN(startedMs)) parts.push(`started ${ago(startedMs)}`);
  return {
    id: `worker-attempt:${a.id}`,
    attemptId: a.id,
    label: `${a.rollout_id} #${a.index}`,
    description: parts.join(' · '),
    tooltip: [`attempt ${a.index} of rollout ${a.rollout_id} (${a.id}) on ${a.worker ?? '—'}`, a.error ?? '']
      .filter(Boolean)
      .join('\n\n'),
    icon: statusIcon(a.status),
  };
}

/** The text of the attempt-output document: a header line, then the kept output. */
export function attemptOutputText(
  a: { id: string; worker?: string | null },
  out: { output: string; truncated: boolean },
): string {
  const head = `# attempt ${a.id}${a.worker ? ` on ${a.worker}` : ''}${out.truncated ? ' (only the tail is kept)' : ''}`;
  return `${head}\n${out.output || '(no output)'}`;
}
