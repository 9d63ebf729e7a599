// The daemon's own tokenizers, one per served model (config `model_files`: served name → a local model
// folder), loaded on their first bridged call, and whether each backend agrees with them: checked
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

/**
 * Loaded tokenizers, kept for the daemon's life: one per served model named in `model_files` (a
 * handful; Qwen3's holds ~120 MB once loaded, nothing before its first bridged call).
 */
export class LocalTokenizers {
  private readonly loaded = new Map<string, Promise<Loaded>>();
  /** Per backend root and model: checks done, and the disagreement that ended trust (null: none). */
  private readonly trust = new Map<string, { calls: number; distrust: string | null }>();

  constructor(
    private readonly folders: Record<string, string>,
    private readonly checkEvery: number,
    private readonly log: (message: string, detail?: Record<string, unknown>) => void = () => {},
  ) {}

  /** Whether `model` has a folder of its own files. */
  has(model: string): boolean {
    return Object.hasOwn(this.folders, model);
  }

  /** The model's tokenizer (loading it on first use), or why there is none. */
  async get(model: string): Promise<Loaded> {
    if (!this.has(model)) return { tok: null, problem: null };
    let p = this.loaded.get(model);
    if (!p) {
      const dir = this.folders[model];
      p = (async () => {
        try {
          // Loaded only here: the tokenizer library and the files cost nothing until a call needs them.
          const [{ readModelFolder }, { LocalChatTokenizer }] = await Promise.all([
            import('./files'),
            import('./local'),
          ]);
          return { tok: new LocalChatTokenizer(readModelFolder(dir)), problem: null };
        } catch (e) {
          const problem = `the model's tokenizer files could not be used: ${errorText(e)}`;
          this.log('bridge: local tokenizer unavailable', { model, dir, problem });
          return { tok: null, problem };
        }
      })();
      this.loaded.set(model, p);
    }
    return p;
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
