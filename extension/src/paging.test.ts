import { describe, expect, it } from 'vitest';
import type { PageResult } from './client';
import { PagedList } from './paging';

type Item = { id: string; v?: number };
/** A server-side list of n items paged by an index cursor, counting requests. */
function server(n: number, pageSize: number) {
  const all: Item[] = Array.from({ length: n }, (_, i) => ({ id: `r${i}` }));
  const calls: (string | undefined)[] = [];
  const fetchPage = async (cursor: string | undefined): Promise<PageResult<Item>> => {
    calls.push(cursor);
    const start = cursor ? Number(cursor) : 0;
    const items = all.slice(start, start + pageSize);
    return { items, next_cursor: start + pageSize < n ? String(start + pageSize) : null };
  };
  return { all, calls, fetchPage };
}

describe('PagedList (sidebar paging)', () => {
  it('opening a run with 100,000 rollouts loads one page, not the run', async () => {
    const s = server(100_000, 100);
    const list = new PagedList(s.fetchPage);
    const items = await list.ensure();
    expect(items).toHaveLength(100);
    expect(list.hasMore).toBe(true);
    expect(s.calls).toEqual([undefined]);
  });

  it('"Load more" appends the next page with the cursor and stops at the end', async () => {
    const s = server(250, 100);
    const list = new PagedList(s.fetchPage);
    await list.ensure();
    await list.loadMore();
    await list.loadMore();
    await list.loadMore();
    expect(list.items.map((x) => x.id)).toEqual(s.all.map((x) => x.id));
    expect(list.hasMore).toBe(false);
    expect(s.calls).toEqual([undefined, '100', '200']);
  });

  it('concurrent expansions share one request', async () => {
    const s = server(10, 5);
    const list = new PagedList(s.fetchPage);
    await Promise.all([list.ensure(), list.ensure(), list.ensure()]);
    expect(s.calls).toHaveLength(1);
  });

  it('live updates replace items in place and add new ones only where they cannot duplicate', async () => {
    const s = server(3, 2);
    const list = new PagedList(s.fetchPage);
    expect(list.upsert({ id: 'new' })).toBe(false); // not loaded: nothing to update
    await list.ensure();
    expect(list.upsert({ id: 'r0', v: 1 })).toBe(true);
    expect(list.items[0]).toEqual({ id: 'r0', v: 1 });
    expect(list.upsert({ id: 'r9' }, 'back')).toBe(false); // more pages on the server
    expect(list.upsert({ id: 'r9' }, 'front')).toBe(true);
    expect(list.items[0].id).toBe('r9');
    list.reset();
    expect(list.loaded).toBe(false);
  });
});
