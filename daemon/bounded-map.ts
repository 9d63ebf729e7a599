// A Map that holds at most a byte budget of entries, each weighed when it is set; past the budget the
// entries set longest ago go first. Every per-rollout cache of the daemon is one, each with its budget
// and what a byte counts written beside it, and each also forgets a rollout's entries when it ends.
export class BoundedMap<K, V> {
  private readonly entries = new Map<K, { value: V; bytes: number }>();
  private held = 0;

  /** `onEvict` sees each entry dropped to make room (not those deleted or replaced). */
  constructor(
    readonly budgetBytes: number,
    private readonly onEvict?: (key: K, value: V) => void,
  ) {}

  get size(): number {
    return this.entries.size;
  }

  /** The bytes the entries weigh together (never above the budget once `set` returns). */
  get bytes(): number {
    return this.held;
  }

  get(key: K): V | undefined {
    return this.entries.get(key)?.value;
  }

  has(key: K): boolean {
    return this.entries.has(key);
  }

  /**
   * Sets `key` as the newest entry, weighing `bytes`, then drops the oldest entries while the map is
   * over its budget (this one too, when it alone weighs more).
   */
  set(key: K, value: V, bytes: number): void {
    this.delete(key);
    this.entries.set(key, { value, bytes });
    this.held += bytes;
    for (const [oldest, e] of this.entries) {
      if (this.held <= this.budgetBytes) break;
      this.entries.delete(oldest);
      this.held -= e.bytes;
      this.onEvict?.(oldest, e.value);
    }
  }

  delete(key: K): boolean {
    const e = this.entries.get(key);
    if (!e) return false;
    this.entries.delete(key);
    this.held -= e.bytes;
    return true;
  }

  /** Deletes the oldest entries while `stale` holds for them (the first that is not stops it). */
  deleteOldestWhile(stale: (value: V, key: K) => boolean): void {
    for (const [key, e] of this.entries) {
      if (!stale(e.value, key)) break;
      this.delete(key);
    }
  }

  /** Deletes every entry `drop` picks. */
  deleteWhere(drop: (value: V, key: K) => boolean): void {
    for (const [key, e] of this.entries) if (drop(e.value, key)) this.delete(key);
  }

  clear(): void {
    this.entries.clear();
    this.held = 0;
  }
}

/**
 * About how many bytes of heap `value` (parsed JSON) takes: a string its characters (V8 keeps
 * latin-1 text at one byte a character) plus a header, a number or a slot 8, an object or array
 * a header and its slots. An estimate for budgets, within a small factor of the heap's own count.
 */
export function jsonBytes(value: unknown, depth = 0): number {
  if (typeof value === 'string') return 16 + value.length;
  if (value === null || typeof value !== 'object' || depth > 64) return 8;
  let n = 32;
  if (Array.isArray(value)) {
    for (const v of value) n += 8 + jsonBytes(v, depth + 1);
    return n;
  }
  for (const k in value) n += 16 + k.length + jsonBytes((value as Record<string, unknown>)[k], depth + 1);
  return n;
}
