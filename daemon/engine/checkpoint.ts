// Checkpoints: <dataDir>/engine/v<version>.bin (params, Adam m, Adam v as float64 little-endian)
// + v<version>.json (meta) + latest.json (pointer, written last, atomically).
import { mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import type { ModelConfig } from './layout';

export const CheckpointMeta = z.object({
  format: z.literal('harness-rl-reference/1'),
  version: z.number().int().nonnegative(),
  seed: z.number().int(),
  config: z.object({
    vocab: z.number().int().positive(),
    dModel: z.number().int().positive(),
    nHeads: z.number().int().positive(),
    nLayers: z.number().int().positive(),
    dFf: z.number().int().positive(),
    maxLen: z.number().int().positive(),
    alibi: z.array(z.number()),
  }),
  params: z.number().int().positive(),
  adam_t: z.number().int().nonnegative(),
  weights: z.string(),
  saved_at: z.string(),
});
export type CheckpointMeta = z.infer<typeof CheckpointMeta>;

export interface CheckpointData {
  version: number;
  seed: number;
  config: ModelConfig;
  params: Float64Array;
  adam: { m: Float64Array; v: Float64Array; t: number };
}

const KEEP = 3;

export async function saveCheckpoint(dir: string, c: CheckpointData): Promise<string> {
  await mkdir(dir, { recursive: true });
  const n = c.params.length;
  const all = new Float64Array(3 * n);
  all.set(c.params, 0);
  all.set(c.adam.m, n);
  all.set(c.adam.v, 2 * n);
  const weights = `v${c.version}.bin`;
  await writeFile(join(dir, weights), Buffer.from(all.buffer, all.byteOffset, all.byteLength));
  const meta: CheckpointMeta = {
    format: 'harness-rl-reference/1',
    version: c.version,
    seed: c.seed,
    config: c.config,
    params: n,
    adam_t: c.adam.t,
    weights,
    saved_at: new Date().toISOString(),
  };
  const metaPath = join(dir, `v${c.version}.json`);
  await writeFile(metaPath, JSON.stringify(meta, null, 2));
  const tmp = join(dir, `latest.json.${process.pid}.tmp`);
  await writeFile(tmp, JSON.stringify({ meta: `v${c.version}.json` }));
  await rename(tmp, join(dir, 'latest.json'));
  // keep the newest few
  const versions = (await readdir(dir))
    .map((f) => /^v(\d+)\.json$/.exec(f))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => Number(m[1]))
    .sort((a, b) => b - a);
  for (const v of versions.slice(KEEP)) {
    await rm(join(dir, `v${v}.json`), { force: true });
    await rm(join(dir, `v${v}.bin`), { force: true });
  }
  return metaPath;
}

/** Loads the checkpoint latest.json points to; null when there is none. */
export async function loadLatestCheckpoint(dir: string): Promise<CheckpointData | null> {
  let pointer: { meta: string };
  try {
    pointer = z
      .object({ meta: z.string() })
      .parse(JSON.parse(await readFile(join(dir, 'latest.json'), 'utf8')));
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw new Error(`unreadable checkpoint pointer in ${dir}: ${(e as Error).message}`);
  }
  return loadCheckpoint(join(dir, pointer.meta));
}

export async function loadCheckpoint(metaPath: string): Promise<CheckpointData> {
  const parsed = CheckpointMeta.safeParse(JSON.parse(await readFile(metaPath, 'utf8')));
  if (!parsed.success) throw new Error(`bad checkpoint meta ${metaPath}: ${z.prettifyError(parsed.error)}`);
  const meta = parsed.data;
  const buf = await readFile(join(metaPath, '..', meta.weights));
  const n = meta.params;
  if (buf.byteLength !== 3 * n * 8)
    throw new Error(`checkpoint ${meta.weights} has ${buf.byteLength} bytes, want ${3 * n * 8}`);
  const all = new Float64Array(buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.byteLength));
  return {
    version: meta.version,
    seed: meta.seed,
    config: meta.config,
    params: all.slice(0, n),
    adam: { m: all.slice(n, 2 * n), v: all.slice(2 * n), t: meta.adam_t },
  };
}

/** The newest checkpoint in `dir` by its file names (v<N>.json), whether or not latest.json is there. */
export async function loadNewestCheckpointIn(dir: string): Promise<CheckpointData> {
  const newest = (await readdir(dir))
    .map((f) => /^v(\d+)\.json$/.exec(f))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => Number(m[1]))
    .sort((a, b) => b - a)[0];
  if (newest === undefined) throw new Error(`no reference checkpoint (v<N>.json) in ${dir}`);
  return loadCheckpoint(join(dir, `v${newest}.json`));
}
