// What an evolution left in the store, read back to resume it after a daemon stop: its candidates
// with their files (patches applied), their finished train and held-out evaluations (and the
// trajectories the pruner and novelty compare), and the evaluations it had started but not yet linked
// to a candidate (by name: a restarted daemon runs them over), so nothing evaluated is evaluated again.
import { parseCandidateEvaluationName } from '../protocol/evolution';
import type { Store, StoredCandidate, StoredEvaluation, StoredEvolution } from '../store/store';
import { type Trajectories, trajectoriesOf } from './behaviour';
import { candidateTree } from './candidate-harness';
import type { Tree } from './diff';

export interface StoredProgress {
  candidates: StoredCandidate[];
  trees: Map<string, Tree>;
  train: Map<string, StoredEvaluation>;
  trajectories: Map<string, Trajectories>;
  heldOut: Map<string, StoredEvaluation>;
  /** Evaluations of this evolution by name, not failed or stopped (running ones: a daemon runs them over). */
  started: Map<string, StoredEvaluation>;
}

async function startedEvaluations(store: Store, e: StoredEvolution): Promise<Map<string, StoredEvaluation>> {
  const byName = new Map<string, StoredEvaluation>();
  let cursor: string | undefined;
  for (;;) {
    const page = await store.listEvaluations({ limit: 200, ...(cursor ? { cursor } : {}) });
    for (const x of page.items)
      if (
        parseCandidateEvaluationName(x.name)?.evolution === e.id &&
        (x.status === 'running' || x.status === 'finished')
      )
        byName.set(x.name, byName.get(x.name)?.status === 'finished' ? byName.get(x.name)! : x);
    const older = page.items.some((x) => x.created_at < e.created_at);
    if (!page.next_cursor || older) return byName;
    cursor = page.next_cursor;
  }
}

export async function storedProgress(store: Store, e: StoredEvolution): Promise<StoredProgress> {
  const candidates = await store.listCandidates(e.id);
  const trees = new Map(candidates.map((c) => [c.hash, candidateTree(candidates, c.hash)]));
  const train = new Map<string, StoredEvaluation>();
  const heldOut = new Map<string, StoredEvaluation>();
  const trajectories = new Map<string, Trajectories>();
  const finished = async (id: string | null) => {
    const x = id ? await store.getEvaluation(id) : null;
    return x?.status === 'finished' ? x : null;
  };
  for (const c of candidates) {
    const t = await finished(c.train_evaluation);
    if (t) {
      train.set(c.hash, t);
      trajectories.set(c.hash, await trajectoriesOf(store, t.tasks ?? []));
    }
    const h = await finished(c.held_out_evaluation);
    if (h) heldOut.set(c.hash, h);
  }
  return { candidates, trees, train, trajectories, heldOut, started: await startedEvaluations(store, e) };
}
