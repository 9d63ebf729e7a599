import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { openStore, SQLITE_FILE } from './open';
import { newCall } from './test-calls';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe('sqlite checkpoint worker', () => {
  it('moves committed writes from the WAL into the database file while the store stays open', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'hrl-sqlite-ckpt-'));
    dirs.push(dir);
    const store = await openStore('sqlite', dir);
    const file = join(dir, SQLITE_FILE);
    const before = statSync(file).size;
    const ro = await store.createRollout({ kind: 'standalone' });
    // Each prompt its own (none extends the last, so each call's 16 KiB of ids is stored whole).
    const idsOf = (k: number) => Array.from({ length: 4096 }, (_, i) => (i * 7 + k) % 50_000);
    for (let i = 0; i < 40; i++) {
      await store.recordLlmCalls([newCall({ rollout_id: ro.id, prompt_ids: idsOf(i) })]);
    }
    // The connection's own autocheckpoint does not fire this early (~256 MiB of WAL); the worker does.
    await vi.waitFor(() => expect(statSync(file).size).toBeGreaterThan(before + 40 * 16_384), {
      timeout: 10_000,
      interval: 50,
    });
    await store.close();
    const again = await openStore('sqlite', dir);
    const calls = await again.listLlmCalls(ro.id);
    expect(calls.map((c) => c.seq)).toEqual(Array.from({ length: 40 }, (_, i) => i));
    expect(calls[39].prompt_ids).toEqual(idsOf(39));
    await again.close();
  });

  it("a small call's commit writes under 60 KB of WAL (whole pages: with 32 KiB ones it wrote ~98 KB)", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'hrl-sqlite-wal-'));
    dirs.push(dir);
    const store = await openStore('sqlite', dir);
    const wal = join(dir, `${SQLITE_FILE}-wal`);
    const ro = await store.createRollout({ kind: 'standalone' });
    await store.recordLlmCall(newCall({ rollout_id: ro.id }));
    // Fewer commits than start the checkpoint worker: the WAL only grows, by what each commit wrote.
    const before = statSync(wal).size;
    for (let i = 0; i < 8; i++) await store.recordLlmCall(newCall({ rollout_id: ro.id }));
    expect((statSync(wal).size - before) / 8).toBeLessThan(60_000);
    await store.close();
  });

  it('a short-lived store with few writes closes and reopens with its data', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'hrl-sqlite-ckpt-'));
    dirs.push(dir);
    const store = await openStore('sqlite', dir);
    const ro = await store.createRollout({ kind: 'standalone' });
    await store.recordLlmCall(newCall({ rollout_id: ro.id }));
    await store.close();
    const again = await openStore('sqlite', dir);
    expect(await again.listLlmCalls(ro.id)).toHaveLength(1);
    await again.close();
  });
});
