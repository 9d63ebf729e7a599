// The daemon's own tokenizers, one per served model (config `model_files`: served name → a local model
// folder; else, on an inference node, the files the node serves: ./remote), loaded ahead of their first
// bridged call (`warm`: when a backend says it serves the model; ~1 s of CPU for Qwen3, in pieces),
// and whether each backend agrees with them: checked
// against the backend's /tokenize on first use and every `tokenizer_check_every`-th call after; a
// disagreement sends that backend's calls of that model back to the backend's tokenizer.
import { errorText } from '../error-text';
import type { LocalChatTokenizer } from './local';

/** What a bridged call's record says about the tokenizer it used (BridgeRecord's fields). */
export interface TokenizerNote {
  tokenizer: 'daemon' | 'backend';
  /** Why the daemon's own was not used, or what checking it against /tokenize found. */
  tokenizer_check?: string;
}

interface Loaded {
  tok: LocalChatTokenizer | null;
  /** Why there is none (the files could not be read). */
  problem: string | null;
}

/** Models fetched from nodes whose tokenizers are kept (the one used longest ago goes past it). */
const REMOTE_TOKENIZERS = 4;
/** A node that had no files for a model (or failed to send them) is asked again after this long. */
const REMOTE_RETRY_MS = 60_000;

interface RemoteEntry {
  loaded: Promise<Loaded>;
  /** When it was asked for, then when it settled. */
  at: number;
  failed: boolean;
  tok: LocalChatTokenizer | null;
}

const isNode = (root: string) => root.startsWith('ws://') || root.startsWith('wss://');

/**
 * Loaded tokenizers, kept for the daemon's life: one per served model named in `model_files` (a
 * handful; Qwen3's holds ~120 MB once loaded, nothing before it is warmed or called), and at most
 * REMOTE_TOKENIZERS of models whose files came from nodes (nodes serving the same files share one).
 */
export class LocalTokenizers {
  private readonly loaded = new Map<string, Promise<Loaded>>();
  /** The folder models whose load has settled. */
  private readonly done = new Set<string>();
  /** Per node root and model: its files' tokenizer, or why there is none (and since when). */
  private readonly remote = new Map<string, RemoteEntry>();
  /** Per hash of a node's files: the tokenizer built from them (REMOTE_TOKENIZERS, oldest use goes). */
  private readonly byFiles = new Map<string, LocalChatTokenizer>();
  /** Per backend root and model: checks done, and the disagreement that ended trust (null: none). */
  private readonly trust = new Map<string, { calls: number; distrust: string | null }>();

  constructor(
    private readonly folders: Record<string, string>,
    private readonly checkEvery: number,
    private readonly log: (message: string, detail?: Record<string, unknown>) => void = () => {},
    /** Where files fetched from nodes are kept (null: never fetch them). */
    private readonly cacheDir: string | null = null,
  ) {}

  /** Whether `model` has a folder of its own files, or `root` is a node that may serve them. */
  has(model: string, root: string): boolean {
    return Object.hasOwn(this.folders, model) || (this.cacheDir !== null && isNode(root));
  }

  /**
   * Loads `model`'s tokenizer (of its folder, or of the files the node at `root` serves) ahead of its
   * first bridged call, on the event loop's next turn: the load's ~1 s of CPU then holds no call.
   */
  warm(model: string, root: string): Promise<void> {
    if (!this.has(model, root)) return Promise.resolve();
    return new Promise<void>((resolve) => setImmediate(resolve)).then(async () => {
      await this.get(model, root);
    });
  }

  /** Every model of `model_files`, warmed. */
  warmFolders(): Promise<void> {
    return Promise.all(Object.keys(this.folders).map((m) => this.warm(m, ''))).then(() => {});
  }

  /** Whether `model`'s tokenizer for `root` is loaded (or failed to): a call would not wait for it. */
  settled(model: string, root: string): boolean {
    if (Object.hasOwn(this.folders, model)) return this.done.has(model);
    const entry = this.remote.get(`${root} ${model}`);
    return entry !== undefined && (entry.tok !== null || entry.failed);
  }

  /** The model's tokenizer (loading it on first use, when not warmed), or why there is none. */
  async get(model: string, root: string): Promise<Loaded> {
    if (!Object.hasOwn(this.folders, model))
      return this.cacheDir !== null && isNode(root)
        ? this.fromNode(root, model)
        : { tok: null, problem: null };
    let p = this.loaded.get(model);
    if (!p) {
      const dir = this.folders[model];
      p = (async () => {
        try {
          // Loaded only here: the tokenizer library and the files cost nothing until warmed or called.
          const [{ readModelFolderAsync, nextTurn }, { LocalChatTokenizer }] = await Promise.all([
            import('./files'),
            import('./local'),
          ]);
          const files = await readModelFolderAsync(dir);
          await nextTurn();
          return { tok: new LocalChatTokenizer(files), problem: null };
        } catch (e) {
          const problem = `the model's tokenizer files could not be used: ${errorText(e)}`;
          this.log('bridge: local tokenizer unavailable', { model, dir, problem });
          return { tok: null, problem };
        } finally {
          this.done.add(model);
        }
      })();
      this.loaded.set(model, p);
    }
    return p;
  }

  /** The tokenizer of the files the node at `root` serves for `model`, fetched once (and again after a failure). */
  private fromNode(root: string, model: string): Promise<Loaded> {
    const key = `${root} ${model}`;
    const entry = this.remote.get(key);
    if (entry && !(entry.failed && Date.now() - entry.at > REMOTE_RETRY_MS)) return entry.loaded;
    const record = { loaded: this.fetchTokenizer(root, model), at: Date.now(), failed: false, tok: null };
    this.remote.set(key, record as RemoteEntry);
    void record.loaded.then((l) => {
      Object.assign(record, { at: Date.now(), failed: l.tok === null, tok: l.tok });
    });
    return record.loaded;
  }

  private async fetchTokenizer(root: string, model: string): Promise<Loaded> {
    try {
      const [{ fetchModelFiles }, { LocalChatTokenizer }] = await Promise.all([
        import('./remote'),
        import('./local'),
      ]);
      const fetched = await fetchModelFiles(root, model, this.cacheDir as string);
      if (!fetched) return { tok: null, problem: `the node has no tokenizer files for ${model}` };
      let tok = this.byFiles.get(fetched.hash);
      if (!tok) {
        await new Promise<void>((resolve) => setImmediate(resolve));
        tok = new LocalChatTokenizer(fetched.files);
      }
      this.byFiles.delete(fetched.hash);
      this.byFiles.set(fetched.hash, tok);
      if (this.byFiles.size > REMOTE_TOKENIZERS) {
        const [oldest, evicted] = this.byFiles.entries().next().value as [string, LocalChatTokenizer];
        this.byFiles.delete(oldest);
        for (const [k, e] of this.remote) if (e.tok === evicted) this.remote.delete(k);
      }
      return { tok, problem: null };
    } catch (e) {
      const problem = `the node's tokenizer files could not be used: ${e instanceof Error ? e.message : String(e)}`;
      this.log('bridge: tokenizer files from the node unavailable', { model, root, problem });
      return { tok: null, problem };
    }
  }

  /** Why `root`'s calls of `model` no longer use the daemon's tokenizer (null: they do). */
  distrusted(root: string, model: string): string | null {
    return this.trust.get(`${root} ${model}`)?.distrust ?? null;
  }

  /** For a bridged call of `model` on `root`: whether it is checked against /tokenize (the first, then every checkEvery-th). */
  verdict(root: string, model: string): { check: boolean; first: boolean } {
    const key = `${root} ${model}`;
    let t = this.trust.get(key);
    if (!t) {
      t = { calls: 0, distrust: null };
      this.trust.set(key, t);
    }
    const n = t.calls++;
    return {
      check: n === 0 || (this.checkEvery > 0 && n % this.checkEvery === 0),
      first: n === 0,
    };
  }

  /** The backend's /tokenize disagreed: its calls of `model` use the backend's tokenizer from now on. */
  distrust(root: string, model: string, why: string): void {
    const key = `${root} ${model}`;
    this.trust.set(key, { calls: this.trust.get(key)?.calls ?? 0, distrust: why });
    this.log('bridge: the local tokenizer disagrees with the backend; using the backend’s', {
      root,
      model,
      why,
    });
  }
}

/** Where two id lists first differ, for the record: index, both ids, and what they decode to. */
export function firstDifference(
  local: readonly number[],
  backend: readonly number[],
  decode: (ids: number[]) => string,
): string | null {
  const n = Math.min(local.length, backend.length);
  let i = 0;
  while (i < n && local[i] === backend[i]) i++;
  if (i === n && local.length === backend.length) return null;
  const show = (ids: readonly number[]) => JSON.stringify(decode(ids.slice(i, i + 8) as number[]));
  return `at token ${i} of ${backend.length} (the daemon's ${local.length}): daemon ${show(local)}, backend ${show(backend)}`;
}
