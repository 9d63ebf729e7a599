// Snapshots by content hash: a tree round-trips with its executable bits and links, equal content is
// stored once, caches and version control stay out, and so do the task file and store synthesis writes
// into the repository itself.
import { existsSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, readdir, readFile, readlink, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { readRepo, SnapshotStore } from './snapshot';

let dir: string;
afterEach(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('snapshots', () => {
  it('a tree comes back with its bytes, executable bits and links; caches, .git and excluded paths are left out', async () => {
    dir = await mkdtemp(join(tmpdir(), 'snapshot-'));
    const repo = join(dir, 'repo');
    for (const d of ['src', '.git', 'src/__pycache__', 'node_modules/x', 'snapshots'])
      await mkdir(join(repo, d), { recursive: true });
    await writeFile(join(repo, 'src/a.py'), 'print("é")\n');
    await writeFile(join(repo, 'run.sh'), '#!/bin/sh\n');
    await chmod(join(repo, 'run.sh'), 0o755);
    await writeFile(join(repo, '.git/HEAD'), 'ref');
    await writeFile(join(repo, 'src/__pycache__/a.pyc'), 'x');
    await writeFile(join(repo, 'tasks.jsonl'), '{}\n');
    await writeFile(join(repo, 'snapshots/blob'), 'x');
    const { files, links } = await readRepo(repo, [join(repo, 'tasks.jsonl'), join(repo, 'snapshots')]);
    expect([...files.keys()].sort()).toEqual(['run.sh', 'src/a.py']);
    expect(links).toEqual({ node_modules: join(repo, 'node_modules') });

    const store = new SnapshotStore(join(dir, 'store'));
    const hash = await store.put(files, links);
    expect(await store.put(files, links)).toBe(hash);
    const out = join(dir, 'out');
    await mkdir(out);
    await store.materialize(hash, out);
    expect(await readFile(join(out, 'src/a.py'), 'utf8')).toBe('print("é")\n');
    expect((await stat(join(out, 'run.sh'))).mode & 0o111).not.toBe(0);
    expect(await readlink(join(out, 'node_modules'))).toBe(join(repo, 'node_modules'));
    expect(existsSync(join(out, 'tasks.jsonl'))).toBe(false);
  });

  it('a tree with one file changed stores one more blob, not a copy', async () => {
    dir = await mkdtemp(join(tmpdir(), 'snapshot-'));
    const store = new SnapshotStore(join(dir, 'store'));
    const files = new Map([
      ['a.py', { data: Buffer.from('a = 1\n'), x: false }],
      ['b.py', { data: Buffer.from('b = 2\n'), x: false }],
    ]);
    const clean = await store.put(files, {});
    const mutant = await store.put(
      new Map([...files, ['a.py', { data: Buffer.from('a = 2\n'), x: false }]]),
      {},
    );
    expect(mutant).not.toBe(clean);
    const blobs = (await readdir(join(dir, 'store/blobs'), { recursive: true })).filter((p) => p.length > 3);
    expect(blobs).toHaveLength(3);
    await expect(store.tree('f'.repeat(64))).rejects.toThrow('is not in the store');
  });
});
