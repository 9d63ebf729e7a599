// A run (or an evaluation, or an evolution's evaluations) that starts from another run's weights
// (`model.from_run: {run, version}`): the built-in engine's checkpoint of that version, copied once
// into the daemon's own folder, because the source run keeps only its newest few checkpoints and may
// go on training while this one runs.
import { existsSync, readFileSync } from 'node:fs';
import { copyFile, mkdir, readdir, rename } from 'node:fs/promises';
import { join } from 'node:path';
import { CheckpointMeta } from '../engine/checkpoint';

/** Where the engine's checkpoints of run `runId` are (RunBackends starts its engine in runs/<id>). */
export const engineCheckpointDir = (dataDir: string, runId: string) => join(dataDir, 'runs', runId, 'engine');

/** The copied checkpoint (its meta file) a run starting from `run` at `version` loads. */
export const startingWeightsMeta = (dataDir: string, run: string, version: number) =>
  join(dataDir, 'starting-weights', `${run}-v${version}`, `v${version}.json`);

/** The model versions run `runId` has a checkpoint of, oldest first. */
export async function checkpointVersions(dataDir: string, runId: string): Promise<number[]> {
  const dir = engineCheckpointDir(dataDir, runId);
  if (!existsSync(dir)) return [];
  return (await readdir(dir))
    .map((f) => /^v(\d+)\.json$/.exec(f))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => Number(m[1]))
    .sort((a, b) => a - b);
}

/**
 * Copies run `run`'s checkpoint of `version` to startingWeightsMeta (once: a copy made before stays);
 * returns its meta path. Throws when the run keeps no checkpoint of that version.
 */
export async function keepStartingWeights(dataDir: string, run: string, version: number): Promise<string> {
  const meta = startingWeightsMeta(dataDir, run, version);
  if (existsSync(meta)) return meta;
  const from = engineCheckpointDir(dataDir, run);
  const source = join(from, `v${version}.json`);
  if (!existsSync(source)) {
    const kept = await checkpointVersions(dataDir, run);
    throw new Error(
      `run ${run} keeps no checkpoint of model version ${version} (${kept.length ? `it keeps versions ${kept.join(', ')}` : 'it has none: only runs on the built-in engine write them'})`,
    );
  }
  const weights = CheckpointMeta.parse(JSON.parse(readFileSync(source, 'utf8'))).weights;
  const dir = join(meta, '..');
  const tmp = `${dir}.${process.pid}.tmp`;
  await mkdir(tmp, { recursive: true });
  await copyFile(join(from, weights), join(tmp, weights));
  await copyFile(source, join(tmp, `v${version}.json`));
  await rename(tmp, dir).catch((err) => {
    if (!existsSync(meta)) throw err; // another start copied it first
  });
  return meta;
}
