// A list the sidebar loads page by page with the daemon's cursors, so a run with 100,000
// rollouts opens with one request of `pageSize` items and a "Load more" item.
import type { PageResult } from './client';

export class PagedList<T extends { id: string }> {
  items: T[] = [];
  nextCursor: string | null = null;
  loaded = false;
  private pending: Promise<void> | undefined;

  constructor(private readonly fetchPage: (cursor: string | undefined) => Promise<PageResult<T>>) {}

  get hasMore(): boolean {
    return this.nextCursor !== null;
  }

  /** Loads the first page once; later calls return what is loaded. */
  async ensure(): Promise<T[]> {
    if (!this.loaded) await this.load(undefined);
    return this.items;
  }

  /** Appends the next page (no-op when every page is loaded). */
  async loadMore(): Promise<T[]> {
    if (!this.loaded) return this.ensure();
    if (this.nextCursor !== null) await this.load(this.nextCursor);
    return this.items;
  }

  reset(): void {
    this.items = [];
    this.nextCursor = null;
    this.loaded = false;
    this.pending = undefined;
  }

  /**
   * Applies a live update: replaces the item with the same id, or adds a new one at the front
   * (newest first) when the list is loaded. Returns whether the visible list changed.
   */
  upsert(item: T, position: 'front' | 'back' = 'front'): boolean {
    if (!this.loaded) return false;
    const i = this.items.findIndex((x) => x.id === item.id);
    if (i >= 0) {
      this.items[i] = item;
      return true;
    }
    // With more pages still on the server an appended item could appear twice; leave it to paging.
    if (position === 'back' && this.hasMore) return false;
    if (position === 'front') this.items.unshift(item);
    else this.items.push(item);
    return true;
  }

  private load(cursor: string | undefined): Promise<void> {
    if (this.pending) return this.pending;
    this.pending = (async () => {
      try {
        const page = await this.fetchPage(cursor);
        const seen = new Set(this.items.map((x) => x.id));
        for (const item of page.items) if (!seen.has(item.id)) this.items.push(item);
        this.nextCursor = page.next_cursor ?? null;
        this.loaded = true;
      } finally {
        this.pending = undefined;
      }
    })();
    return this.pending;
  }
}
