// Runs with the same name told apart, the same way in the sidebar, the pickers and the dashboard. Pure.
import type { Run } from '../../daemon/protocol/entities';
import { parseCandidateEvaluationName } from '../../daemon/protocol/evolution';

/**
 * Run names as rows and pickers show them: the name alone where it is unique, else the name and
 * when the run started ("math-agent · Dec 3 15:52"), and the id's tail where even that clashes.
 */
export function runLabels(
  runs: readonly Pick<Run, 'id' | 'name' | 'created_at'>[],
  when: (iso: string) => string = startedAt,
): Map<string, string> {
  const byName = groupBy(runs, (r) => r.name);
  const out = new Map<string, string>();
  for (const same of byName.values()) {
    if (same.length === 1) {
      out.set(same[0]!.id, same[0]!.name);
      continue;
    }
    const byTime = groupBy(same, (r) => `${r.name} · ${when(r.created_at)}`);
    for (const [label, clash] of byTime) {
      for (const r of clash) out.set(r.id, clash.length === 1 ? label : `${label} · ${r.id.slice(-6)}`);
    }
  }
  return out;
}

function groupBy<T>(items: readonly T[], key: (t: T) => string): Map<string, T[]> {
  const out = new Map<string, T[]>();
  for (const t of items) {
    const k = key(t);
    const list = out.get(k);
    if (list) list.push(t);
    else out.set(k, [t]);
  }
  return out;
}

/** "Dec 3 15:52" in the local time zone. */
export function startedAt(iso: string): string {
  const d = new Date(iso);
  const month = d.toLocaleString('en-US', { month: 'short' });
  const hh = String(d.getHours()).padStart(2, '0');
  const mm = String(d.getMinutes()).padStart(2, '0');
  return `${month} ${d.getDate()} ${hh}:${mm}`;
}

/**
 * An evolution candidate's evaluation run as "candidate d43886f0b2 train" (its stored name leads
 * with the evolution's long id, which a row cuts off before the candidate); other names as they are.
 */
export function evaluationRunName(name: string): string {
  const c = parseCandidateEvaluationName(name);
  return c ? `candidate ${c.hash.slice(0, 10)} ${c.split}` : name;
}
