// Loading weights into a vLLM-shaped server (vLLM 0.34's sequence for full weights and its prefix-cache
// answer) and pruning old weight copies, against the reference engine's server, which refuses what
// vLLM refuses.
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ReferenceEngine, startReferenceEngine } from '../engine';
import { readText, send } from '../http';
import { type Post, pruneVersions, reloadFullWeights, resetPrefixCache } from './weights';

let dir: string;
let engine: ReferenceEngine;
let post: Post;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'harness-rl-weights-'));
  engine = await startReferenceEngine({ dataDir: join(dir, 'engine'), resume: false, checkpointEvery: 1 });
  await engine.checkpoint();
  const root = engine.url.replace(/\/v1$/, '');
  post = async (path, body) => {
    const res = await send(root + path, { body: JSON.stringify(body), timeoutMs: 10_000 });
    return { status: res.statusCode ?? 0, text: await readText(res) };
  };
});
afterAll(async () => {
  await engine.close();
  await rm(dir, { recursive: true, force: true });
});

describe('full weights into a vLLM-shaped server', () => {
  it('a reload without a pause is refused, as vLLM 0.34 refuses it (extensible_kv_cache.py:786)', async () => {
    const r = await post('/collective_rpc', {
      method: 'reload_weights',
      kwargs: { weights_path: engine.checkpointDir },
    });
    expect(r.status).toBe(500);
    expect(r.text).toMatch(/pause generation/);
  });

  it('pauses, reloads from weights_path and resumes; generation answers again afterwards', async () => {
    await reloadFullWeights(post, engine.checkpointDir);
    const chat = await post('/v1/chat/completions', {
      model: 'reference',
      messages: [{ role: 'user', content: 'hi' }],
      max_tokens: 1,
    });
    expect(chat.status).toBe(200);
  });

  it('resumes generation even when the reload fails', async () => {
    const calls: string[] = [];
    const failing: Post = async (path, body) => {
      calls.push(path);
      if (path === '/collective_rpc') return { status: 500, text: 'RuntimeError: out of memory' };
      return post(path, body);
    };
    await expect(reloadFullWeights(failing, engine.checkpointDir)).rejects.toThrow(
      /reload_weights answered 500/,
    );
    expect(calls).toEqual(['/pause?mode=wait', '/collective_rpc', '/resume']);
    expect(
      (
        await post('/v1/chat/completions', {
          model: 'reference',
          messages: [{ role: 'user', content: 'x' }],
          max_tokens: 1,
        })
      ).status,
    ).toBe(200);
  });
});

describe("the prefix cache's reset", () => {
  it('reads {"success"}: true passes, false every time fails naming it, 404 (no dev mode) passes', async () => {
    await resetPrefixCache(post);
    const answers =
      (text: string, status = 200): Post =>
      async () => ({ status, text });
    await expect(resetPrefixCache(answers('{"success":false}'), 3, 1)).rejects.toThrow(
      /\{"success": false\} 3 times/,
    );
    await expect(resetPrefixCache(answers('', 404), 1, 1)).resolves.toBeUndefined();
    let n = 0;
    const thenTrue: Post = async () => ({ status: 200, text: JSON.stringify({ success: ++n >= 2 }) });
    await resetPrefixCache(thenTrue, 3, 1);
    expect(n).toBe(2);
  });
});

describe('old weight copies', () => {
  it('keeps the newest k versions (and the one named spare)', async () => {
    const runDir = join(dir, 'copies');
    for (const v of [1, 2, 3, 10]) {
      await mkdir(join(runDir, `v${v}`), { recursive: true });
      await writeFile(join(runDir, `v${v}`, 'model.safetensors'), 'x');
    }
    await writeFile(join(runDir, 'notes.txt'), 'kept');
    const removed = await pruneVersions(runDir, 2, [join(runDir, 'v1')]);
    expect(removed).toEqual([join(runDir, 'v2')]);
    expect((await readdir(runDir)).sort()).toEqual(['notes.txt', 'v1', 'v10', 'v3']);
  });
});
