// The regularisers that decide a candidate, each a small pure function with its rule: the edit budget
// (files, hunks, lines), the leak check (literal task inputs, answers or ids in the added lines), the
// pruner (better than the parent by a paired margin, and trajectories that differ), and novelty (how
// far a candidate's action sequences are from the archive's: a selection bonus).
import type { EvolveConfig, FilePatch, Verdict } from '../protocol/evolution';
import { addedLines, patchStats } from './diff';

/** Rejects a patch over any limit, naming the counts. */
export function editBudget(patch: FilePatch[], budget: EvolveConfig['budget']): Verdict {
  const s = patchStats(patch);
  const counts = `${s.files} files, ${s.hunks} hunks, ${s.lines} lines`;
  if (budget === false) return { verdict: 'off', reason: counts };
  const over = (['files', 'hunks', 'lines'] as const).filter((k) => s[k] > budget[k]);
  if (over.length === 0)
    return {
      verdict: 'accept',
      reason: `${counts} (budget ${budget.files}/${budget.hunks}/${budget.lines})`,
    };
  return {
    verdict: 'reject',
    reason: `over the edit budget: ${over.map((k) => `${s[k]} ${k} > ${budget[k]}`).join(', ')}`,
  };
}

/** Literal values of a task that must not appear in a harness: its id, string fields, its answer. */
function literals(input: unknown): { what: string; text: string }[] {
  const out: { what: string; text: string }[] = [];
  if (input === null || typeof input !== 'object') return out;
  for (const [key, value] of Object.entries(input as Record<string, unknown>)) {
    if (typeof value === 'string' && (key === 'id' ? value.length >= 3 : value.length >= 8))
      out.push({ what: key === 'id' ? 'its id' : `its ${key}`, text: value });
    // Numbers are literal only when long (a 1-digit answer is in any code); short ones count in a routing
    // pattern: an id compared, or a key/value pair of the task in the added text.
    if (typeof value === 'number' && String(value).length >= 5)
      out.push({ what: `its ${key}`, text: String(value) });
  }
  return out;
}

/** A task id for messages: its `id` field, else its index. */
const nameOf = (task: { input: unknown; index: number }) => {
  const id = (task.input as { id?: unknown } | null)?.id;
  return typeof id === 'string' || typeof id === 'number' ? String(id) : `#${task.index}`;
};

/**
 * Rejects a patch whose added lines contain a training task's literal id, long string fields or long
 * numbers, or its whole input as JSON (a lookup table of answers), naming the task.
 */
export function leakCheck(
  patch: FilePatch[],
  tasks: { input: unknown; index: number }[],
  on = true,
): Verdict {
  if (!on) return { verdict: 'off', reason: 'leak check off' };
  const added = addedLines(patch).join('\n');
  for (const task of tasks) {
    const json = JSON.stringify(task.input);
    if (json.length >= 8 && added.includes(json))
      return { verdict: 'reject', reason: `leaks task ${nameOf(task)}: its input` };
    for (const { what, text } of literals(task.input)) {
      if (added.includes(text))
        return { verdict: 'reject', reason: `leaks task ${nameOf(task)}: ${what} ${JSON.stringify(text)}` };
    }
  }
  return { verdict: 'accept', reason: `no literal of ${tasks.length} training tasks in the added lines` };
}

/** Levenshtein distance of two sequences, divided by the longer length (0 same, 1 nothing shared). */
export function sequenceDistance(a: readonly string[], b: readonly string[]): number {
  if (a.length === 0 && b.length === 0) return 0;
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++)
      cur[j] = Math.min(prev[j]! + 1, cur[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    prev = cur;
  }
  return prev[b.length]! / Math.max(a.length, b.length);
}

/** Per task key, the action sequence of each scored attempt. */
export type Behaviour = Map<string, string[][]>;

/**
 * Novelty of a candidate against an archive of earlier candidates: for each task, the distance from each
 * of its action sequences to the nearest sequence any archived candidate had on that task, averaged.
 */
export function novelty(candidate: Behaviour, archive: Behaviour[]): number {
  if (archive.length === 0) return 0;
  const distances: number[] = [];
  for (const [key, seqs] of candidate) {
    const others = archive.flatMap((b) => b.get(key) ?? []);
    if (others.length === 0) continue;
    for (const s of seqs) distances.push(Math.min(...others.map((o) => sequenceDistance(s, o))));
  }
  return distances.length ? distances.reduce((x, y) => x + y, 0) / distances.length : 0;
}

/**
 * The pruner: a candidate stays only when its mean train reward beats its parent's by more than
 * `margin`, paired by task, and its trajectories (fingerprints per task) differ from the parent's.
 */
export function prune(
  comparison: { mean_diff: number | null; ci_low: number | null; ci_high: number | null },
  sameTrajectories: boolean,
  pruner: EvolveConfig['pruner'],
): Verdict {
  const d = comparison.mean_diff;
  const change = `Δ train ${d === null ? '—' : d.toFixed(3)} [${comparison.ci_low?.toFixed(3) ?? '—'}, ${comparison.ci_high?.toFixed(3) ?? '—'}]`;
  if (pruner === false) return { verdict: 'off', reason: change };
  if (sameTrajectories)
    return { verdict: 'reject', reason: `its trajectories do not differ from the parent's (${change})` };
  if (d === null || d <= pruner.margin)
    return {
      verdict: 'reject',
      reason: `not better than the parent by more than ${pruner.margin} (${change})`,
    };
  return { verdict: 'accept', reason: change };
}
