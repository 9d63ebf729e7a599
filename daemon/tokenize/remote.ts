// A served model's tokenizer files fetched from the inference node that serves it (over the node's
// tunnel: MODEL_FILES_PATH in protocol/node.ts), so a bridged call on a remote deployment needs no
// local copy. Each file is checked against the node's SHA-256 and kept in <data>/model-files/<sha256>:
// a file already there (another node, a restart) is not sent again. The folder's budget is
// MODEL_FILES_BUDGET_BYTES; past it the files used longest ago go.
import { createHash } from 'node:crypto';
import {
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { readText, send } from '../http';
import { MODEL_FILES_PATH, ModelFilesManifest } from '../protocol/node';
import type { ModelFiles } from './files';

export const MODEL_FILES_BUDGET_BYTES = 512 * 1024 * 1024;

const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

async function get(url: string): Promise<{ status: number; text: string }> {
  const res = await send(url, { method: 'GET', timeoutMs: 60_000 });
  return { status: res.statusCode ?? 502, text: await readText(res) };
}

/** Drops the cache's files used longest ago until it holds at most `budget` bytes (`keep` stays). */
function prune(dir: string, budget: number, keep: Set<string>): void {
  const files = readdirSync(dir)
    .filter((name) => /^[0-9a-f]{64}$/.test(name))
    .map((name) => ({ name, ...statSync(join(dir, name)) }))
    .sort((a, b) => b.mtimeMs - a.mtimeMs);
  let total = 0;
  for (const f of files) {
    total += f.size;
    if (total > budget && !keep.has(f.name)) rmSync(join(dir, f.name), { force: true });
  }
}

/**
 * The model files the node at `root` (ws(s)://host:port) serves for `model`, and a hash of them all;
 * null when it has none (a node that cannot find them answers 404). Throws when the node answers
 * wrongly (a file whose SHA-256 is not the one listed).
 */
export async function fetchModelFiles(
  root: string,
  model: string,
  cacheDir: string,
  budget = MODEL_FILES_BUDGET_BYTES,
): Promise<{ files: ModelFiles; hash: string } | null> {
  const query = `?model=${encodeURIComponent(model)}`;
  const listed = await get(`${root}${MODEL_FILES_PATH}${query}`);
  if (listed.status === 404) return null;
  if (listed.status !== 200)
    throw new Error(`the node answered ${listed.status}: ${listed.text.slice(0, 200)}`);
  const manifest = ModelFilesManifest.parse(JSON.parse(listed.text));
  mkdirSync(cacheDir, { recursive: true });
  const texts = new Map<string, string>();
  for (const file of manifest.files) {
    const path = join(cacheDir, file.sha256);
    let bytes: Buffer | null = null;
    try {
      bytes = readFileSync(path);
      if (sha256(bytes) !== file.sha256) bytes = null;
      else utimesSync(path, new Date(), new Date());
    } catch {
      bytes = null;
    }
    if (!bytes) {
      const got = await get(`${root}${MODEL_FILES_PATH}/${file.name}${query}`);
      if (got.status !== 200) throw new Error(`${file.name}: the node answered ${got.status}`);
      bytes = Buffer.from(got.text, 'utf8');
      if (sha256(bytes) !== file.sha256)
        throw new Error(`${file.name}: its SHA-256 is not the one the node listed (${file.sha256})`);
      writeFileSync(`${path}.part`, bytes);
      renameSync(`${path}.part`, path);
    }
    texts.set(file.name, bytes.toString('utf8'));
  }
  prune(cacheDir, budget, new Set(manifest.files.map((f) => f.sha256)));
  const json = (name: string): Record<string, unknown> => {
    const text = texts.get(name);
    if (text === undefined) throw new Error(`the node has no ${name} for ${model}`);
    return JSON.parse(text);
  };
  return {
    files: {
      tokenizer: json('tokenizer.json'),
      config: json('tokenizer_config.json'),
      chatTemplate: texts.get('chat_template.jinja') ?? null,
    },
    // Nodes that serve the same files share one tokenizer.
    hash: sha256(Buffer.from(manifest.files.map((f) => `${f.name} ${f.sha256}`).join('\n'))),
  };
}
