// A training run from an evolved harness (`harness.candidate: <evolution>/<hash>`): the candidate's
// files (its ancestors' patches applied from the root down) written into a folder of the daemon's
// own, which becomes the run's `harness.dir`; the run's stored config keeps both.
import { join } from 'node:path';
import type { RunConfig } from '../protocol/config';
import type { Store, StoredCandidate } from '../store/store';
import { applyPatch, type Tree } from './diff';
import { treeHash, writeTree } from './snapshot';

/** A candidate's files: its ancestors' patches applied from the root down. */
export function candidateTree(candidates: StoredCandidate[], hash: string): Tree {
  const byHash = new Map(candidates.map((c) => [c.hash, c]));
  const chain: StoredCandidate[] = [];
  for (let at = byHash.get(hash); at; at = at.parent ? byHash.get(at.parent) : undefined) chain.unshift(at);
  return chain.reduce((tree, c) => applyPatch(tree, c.patch), new Map() as Tree);
}

export class CandidateError extends Error {}

/**
 * The files of candidate `ref` ("<evolution id>/<hash>"); throws CandidateError naming what is missing
 * (no such evolution or candidate, or one whose files no longer hash to its address).
 */
export async function candidateFiles(store: Store, ref: string): Promise<{ tree: Tree; hash: string }> {
  const [evolutionId, hash] = ref.split('/') as [string, string];
  if (!(await store.getEvolution(evolutionId))) throw new CandidateError(`no evolution ${evolutionId}`);
  const candidates = await store.listCandidates(evolutionId);
  if (!candidates.some((c) => c.hash === hash))
    throw new CandidateError(`evolution ${evolutionId} has no candidate ${hash}`);
  const tree = candidateTree(candidates, hash);
  if (treeHash(tree) !== hash)
    throw new CandidateError(`candidate ${hash}'s patches no longer give its files (they hash otherwise)`);
  return { tree, hash };
}

/**
 * `config` with the candidate it names written out under `dataDir`/harnesses (a folder per run start:
 * a harness may write into its folder) and set as its `harness.dir`; as it is without a candidate.
 */
export async function withCandidateHarness(
  store: Store,
  dataDir: string,
  config: RunConfig,
): Promise<RunConfig> {
  const ref = config.harness.candidate;
  if (!ref) return config;
  const { tree, hash } = await candidateFiles(store, ref);
  const stamp = `${Date.now().toString(36)}${Math.floor(Math.random() * 36 ** 4).toString(36)}`;
  const dir = join(dataDir, 'harnesses', `${ref.split('/')[0]}-${hash.slice(0, 12)}-${stamp}`);
  writeTree(dir, tree);
  return { ...config, harness: { ...config.harness, dir } };
}
