// The served model's tokenizer files, answered by the inference node over its tunnel (GET
// MODEL_FILES_PATH?model=…): the daemon renders chat templates and tokenizes bridged calls from them
// without a copy of its own. The folder is --model-files, else what vLLM says it serves (/v1/models
// `root`, the --model it was started with: vllm/entrypoints/openai/models/serving.py:72) when that is a
// local folder or a hub id already in the Hugging Face cache.
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { readText, send } from '../http';
import { MODEL_FILE_NAMES, MODEL_FILES_PATH, type ModelFilesManifest } from '../protocol/node';

export interface ModelFileAnswer {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
}

const json = (status: number, value: unknown): ModelFileAnswer => ({
  status,
  headers: { 'content-type': 'application/json' },
  body: Buffer.from(JSON.stringify(value)),
});
const error = (status: number, message: string) => json(status, { error: { message } });

/** The snapshot folder of a hub id in the Hugging Face cache (the revision refs/main names), or null. */
export function hubSnapshot(id: string, env: NodeJS.ProcessEnv = process.env): string | null {
  if (!/^[\w.-]+\/[\w.-]+$/.test(id)) return null;
  const hub = env.HF_HUB_CACHE ?? join(env.HF_HOME ?? join(homedir(), '.cache', 'huggingface'), 'hub');
  const repo = join(hub, `models--${id.replace('/', '--')}`);
  try {
    const revision = readFileSync(join(repo, 'refs', 'main'), 'utf8').trim();
    const dir = join(repo, 'snapshots', revision);
    return existsSync(dir) ? dir : null;
  } catch {
    return null;
  }
}

export class ModelFileServer {
  /** Per served model name: its folder (null: none found), asked of the backend once. */
  private readonly folders = new Map<string, Promise<string | null>>();

  constructor(
    /** --model-files: the folder of whatever model the node serves. */
    private readonly folder: string | undefined,
    /** The backend's root URL (for /v1/models). */
    private readonly backend: () => string,
  ) {}

  /** Whether a tunnelled request is for the model files (answered here, not by the backend). */
  static handles(path: string): boolean {
    return (
      path === MODEL_FILES_PATH ||
      path.startsWith(`${MODEL_FILES_PATH}/`) ||
      path.startsWith(`${MODEL_FILES_PATH}?`)
    );
  }

  async answer(path: string): Promise<ModelFileAnswer> {
    const url = new URL(path, 'http://node');
    const model = url.searchParams.get('model');
    if (!model) return error(400, 'model: the served model name is required (?model=)');
    const dir = await this.folderOf(model);
    if (!dir)
      return error(404, `this node has no tokenizer files for ${model} (start it with --model-files DIR)`);
    const name = url.pathname.slice(MODEL_FILES_PATH.length + 1);
    if (!name) return json(200, this.manifest(model, dir));
    if (!(MODEL_FILE_NAMES as readonly string[]).includes(name) || !existsSync(join(dir, name)))
      return error(404, `no ${name} among the model files of ${model}`);
    return {
      status: 200,
      headers: { 'content-type': 'application/octet-stream' },
      body: readFileSync(join(dir, name)),
    };
  }

  private manifest(model: string, dir: string): ModelFilesManifest {
    const files = MODEL_FILE_NAMES.filter((name) => existsSync(join(dir, name))).map((name) => {
      const bytes = readFileSync(join(dir, name));
      return { name, size: bytes.length, sha256: createHash('sha256').update(bytes).digest('hex') };
    });
    return { model, files };
  }

  private folderOf(model: string): Promise<string | null> {
    if (this.folder) return Promise.resolve(this.folder);
    let found = this.folders.get(model);
    if (!found) {
      found = this.askBackend(model);
      this.folders.set(model, found);
      // Not found now (the backend still starting, the download not done): asked again next time.
      void found.then((dir) => {
        if (!dir) this.folders.delete(model);
      });
    }
    return found;
  }

  private async askBackend(model: string): Promise<string | null> {
    try {
      const res = await send(`${this.backend()}/v1/models`, { method: 'GET', timeoutMs: 5000 });
      const body = JSON.parse(await readText(res)) as { data?: { id?: unknown; root?: unknown }[] };
      const root = body.data?.find((m) => m.id === model)?.root;
      if (typeof root !== 'string') return null;
      if (existsSync(join(root, 'tokenizer.json')) && statSync(root).isDirectory()) return root;
      return hubSnapshot(root);
    } catch {
      return null;
    }
  }
}
