// Weight folders on the move: described by name, size and sha256 (WeightsRef), sent as `file` frames
// in chunks, written on the other side and checked before anything loads them.
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdir, open, readdir, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { NodeMessage, WeightsRef } from '../protocol/node';

const CHUNK = 1 << 20;

async function sha256Of(path: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/** Describes the files `names` (default: every file) of folder `dir`. */
export async function describeWeights(
  dir: string,
  version: number,
  format: WeightsRef['format'],
  names?: string[],
): Promise<WeightsRef> {
  const list =
    names ?? (await readdir(dir, { withFileTypes: true })).filter((e) => e.isFile()).map((e) => e.name);
  const files = [];
  for (const name of list.sort()) {
    const path = join(dir, name);
    files.push({ name, size: (await stat(path)).size, sha256: await sha256Of(path) });
  }
  return { version, format, path: dir, files };
}

/** Whether `dir` holds every file of `weights` with its size and hash. */
export async function hasWeights(dir: string, weights: WeightsRef): Promise<boolean> {
  for (const f of weights.files) {
    try {
      const path = join(dir, f.name);
      if ((await stat(path)).size !== f.size || (await sha256Of(path)) !== f.sha256) return false;
    } catch {
      return false;
    }
  }
  return weights.files.length > 0;
}

/** Sends the files of `weights` (read from `dir`) as `file` frames with request id `id`. */
export async function sendWeightFiles(
  send: (header: NodeMessage, payload: Uint8Array) => Promise<void>,
  id: string,
  weights: WeightsRef,
  dir = weights.path,
): Promise<void> {
  for (const f of weights.files) {
    const handle = await open(join(dir, f.name), 'r');
    try {
      let offset = 0;
      do {
        const buf = Buffer.allocUnsafe(Math.min(CHUNK, f.size - offset));
        const { bytesRead } = await handle.read(buf, 0, buf.length, offset);
        offset += bytesRead;
        await send(
          { t: 'file', id, name: f.name, offset: offset - bytesRead, last: offset >= f.size },
          buf.subarray(0, bytesRead),
        );
        if (bytesRead === 0) break;
      } while (offset < f.size);
    } finally {
      await handle.close();
    }
  }
}

/** Writes `file` frames into a staging folder; `commit` checks them and moves the folder into place. */
export class WeightsReceiver {
  /** Writes happen one after another, in the order the frames came. */
  private chain: Promise<void> = Promise.resolve();
  private failed: Error | null = null;

  constructor(private readonly staging: string) {}

  write(name: string, offset: number, bytes: Uint8Array): Promise<void> {
    this.chain = this.chain.then(async () => {
      if (this.failed) return;
      try {
        if (!/^[\w.-]+$/.test(name) || name === '.' || name === '..')
          throw new Error(`bad weights file name ${name}`);
        await mkdir(this.staging, { recursive: true });
        const handle = await open(join(this.staging, name), offset === 0 ? 'w' : 'r+');
        try {
          await handle.write(bytes, 0, bytes.length, offset);
        } finally {
          await handle.close();
        }
      } catch (err) {
        this.failed = err as Error;
      }
    });
    return this.chain;
  }

  /** Verifies sizes and hashes, then renames the staging folder to `dest`. */
  async commit(weights: WeightsRef, dest: string): Promise<void> {
    await this.chain;
    if (this.failed) throw new Error(`writing the weights files failed: ${this.failed.message}`);
    if (!(await hasWeights(this.staging, weights)))
      throw new Error(`the weights files of version ${weights.version} arrived incomplete or corrupted`);
    await rm(dest, { recursive: true, force: true });
    await mkdir(join(dest, '..'), { recursive: true });
    await rename(this.staging, dest);
  }

  async discard(): Promise<void> {
    await rm(this.staging, { recursive: true, force: true });
  }
}

export type Post = (path: string, body: unknown) => Promise<{ status: number; text: string }>;

/**
 * Loads a weights folder into a vLLM-compatible server over HTTP: a LoRA adapter through
 * /v1/load_lora_adapter under the served model name (load_inplace; older vLLM: unload, then load), full
 * weights between a pause and a resume (reloadFullWeights); then the prefix cache, computed with the old
 * weights, is reset (resetPrefixCache).
 */
export async function loadWeightsOverHttp(
  post: Post,
  dir: string,
  model: string,
  format: WeightsRef['format'],
): Promise<void> {
  if (format === 'lora') {
    const load = () =>
      post('/v1/load_lora_adapter', { lora_name: model, lora_path: dir, load_inplace: true });
    let r = await load();
    if (r.status === 400 && /already/i.test(r.text)) {
      await post('/v1/unload_lora_adapter', { lora_name: model });
      r = await load();
    }
    if (r.status !== 200)
      throw new Error(
        `/v1/load_lora_adapter answered ${r.status} (vLLM needs --enable-lora and VLLM_ALLOW_RUNTIME_LORA_UPDATING=True): ${r.text.slice(0, 300)}`,
      );
  } else {
    await reloadFullWeights(post, dir);
  }
  await resetPrefixCache(post);
}

/**
 * vLLM 0.34 reloads full weights only while generation is paused: the reload borrows the emptied KV
 * cache's memory and fails otherwise (vllm/v1/worker/extensible_kv_cache.py:786, reached from
 * gpu_worker.py:645 reload_weights(weights_iterator, weights_path, is_checkpoint_format)). So: POST
 * /pause?mode=wait (in-flight requests finish; vllm/entrypoints/rl/online/api_router.py:31), POST
 * /collective_rpc {method: reload_weights, kwargs: {weights_path}} (dev mode, serve/dev/rpc/api_router.py:23;
 * reload/inplace.py:34 points model_config at the path), and POST /resume whatever happened.
 */
export async function reloadFullWeights(post: Post, dir: string): Promise<void> {
  const devMode = '(a full-weight reload needs vLLM with VLLM_SERVER_DEV_MODE=1)';
  const paused = await post('/pause?mode=wait', {});
  if (paused.status !== 200)
    throw new Error(`/pause answered ${paused.status} ${devMode}: ${paused.text.slice(0, 300)}`);
  let failed: Error | null = null;
  try {
    const r = await post('/collective_rpc', { method: 'reload_weights', kwargs: { weights_path: dir } });
    if (r.status !== 200)
      failed = new Error(
        `/collective_rpc reload_weights answered ${r.status} ${devMode}: ${r.text.slice(0, 300)}`,
      );
  } catch (err) {
    failed = err as Error;
  }
  // Resumed whatever happened: a server left paused answers 503 to every call.
  const resumed = await post('/resume', {});
  if (failed) throw failed;
  if (resumed.status !== 200)
    throw new Error(`/resume answered ${resumed.status}: ${resumed.text.slice(0, 300)}`);
}

/**
 * POST /reset_prefix_cache answers {"success": false} while blocks are still held (running requests;
 * vllm/entrypoints/serve/dev/cache/api_router.py:31): tried a few times, then a failure. 404: a server
 * without dev mode, which has no such route (its LoRA loads still work).
 */
export async function resetPrefixCache(post: Post, tries = 5, delayMs = 200): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    const r = await post('/reset_prefix_cache', {});
    if (r.status === 404) return;
    if (r.status !== 200)
      throw new Error(`/reset_prefix_cache answered ${r.status}: ${r.text.slice(0, 200)}`);
    let success: unknown;
    try {
      success = (JSON.parse(r.text) as { success?: unknown }).success;
    } catch {
      throw new Error(
        `/reset_prefix_cache answered ${JSON.stringify(r.text.slice(0, 100))}, not {"success": …}`,
      );
    }
    if (success === true) return;
    if (attempt >= tries)
      throw new Error(
        `/reset_prefix_cache answered {"success": false} ${tries} times: calls would reuse the old weights' cache`,
      );
    await new Promise((r) => setTimeout(r, delayMs));
  }
}

/** Removes all but the newest `keep` version folders (`v<N>`) of `dir`; returns the removed ones. */
export async function pruneVersions(dir: string, keep: number, spare: string[] = []): Promise<string[]> {
  let names: string[];
  try {
    names = (await readdir(dir, { withFileTypes: true }))
      .filter((e) => e.isDirectory() && /^v\d+$/.test(e.name))
      .map((e) => e.name);
  } catch {
    return [];
  }
  const old = names.sort((a, b) => Number(b.slice(1)) - Number(a.slice(1))).slice(keep);
  const removed: string[] = [];
  for (const name of old) {
    const path = join(dir, name);
    if (spare.includes(path)) continue;
    await rm(path, { recursive: true, force: true });
    removed.push(path);
  }
  return removed;
}
