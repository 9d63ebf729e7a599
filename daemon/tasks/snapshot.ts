// Repository snapshots by content hash: every file's bytes stored once under blobs/<sha256>, a tree
// (path → blob, executable bit; links such as node_modules kept as symlinks to where they live) stored
// under trees/<sha256 of the tree>.json. A task names its tree; a mutant is the clean tree with one blob
// swapped, so a thousand tasks on one repository cost one copy of it plus one file each.
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import {
  chmod,
  lstat,
  mkdir,
  readdir,
  readFile,
  realpath,
  rename,
  symlink,
  writeFile,
} from 'node:fs/promises';
import { dirname, join, relative } from 'node:path';
import { z } from 'zod';

/** Folders never part of a snapshot: version control, caches, build and environment outputs. */
export const SKIPPED = new Set([
  '.git',
  '.hg',
  '.svn',
  '__pycache__',
  '.pytest_cache',
  '.mypy_cache',
  '.ruff_cache',
  '.tox',
  '.venv',
  'venv',
  '.cache',
  'coverage',
  '.harness-rl',
]);
/** Folders linked, not copied: the copy sees the original (read-only inside the sandbox). */
export const LINKED = new Set(['node_modules']);

export const Tree = z.object({
  files: z.record(z.string(), z.object({ blob: z.string(), x: z.boolean().optional() })),
  links: z.record(z.string(), z.string()),
});
export type Tree = z.infer<typeof Tree>;

const sha256 = (data: string | Buffer) => createHash('sha256').update(data).digest('hex');

/**
 * The files of `repo` (relative path → bytes, executable) and its links, skipping SKIPPED folders and
 * the `exclude` paths (absolute: the task file and store synthesis writes, when they are inside it).
 */
export async function readRepo(
  repo: string,
  exclude: string[] = [],
): Promise<{ files: Map<string, { data: Buffer; x: boolean }>; links: Record<string, string> }> {
  const files = new Map<string, { data: Buffer; x: boolean }>();
  const links: Record<string, string> = {};
  const walk = async (dir: string): Promise<void> => {
    for (const entry of (await readdir(dir, { withFileTypes: true })).sort((a, b) =>
      a.name.localeCompare(b.name),
    )) {
      const full = join(dir, entry.name);
      const rel = relative(repo, full);
      if (exclude.includes(full)) continue;
      if (LINKED.has(entry.name)) {
        links[rel] = await realpath(full);
      } else if (entry.isDirectory()) {
        if (!SKIPPED.has(entry.name) && !entry.name.endsWith('.egg-info')) await walk(full);
      } else if (entry.isFile()) {
        const st = await lstat(full);
        files.set(rel, { data: await readFile(full), x: (st.mode & 0o111) !== 0 });
      }
    }
  };
  await walk(repo);
  return { files, links };
}

export class SnapshotStore {
  constructor(readonly root: string) {}

  private async putBlob(data: Buffer): Promise<string> {
    const hash = sha256(data);
    const path = join(this.root, 'blobs', hash.slice(0, 2), hash);
    if (!existsSync(path)) {
      await mkdir(dirname(path), { recursive: true });
      await writeFile(`${path}.tmp`, data);
      await rename(`${path}.tmp`, path);
    }
    return hash;
  }

  /** Stores a tree of files; returns its content hash. */
  async put(
    files: Map<string, { data: Buffer; x: boolean }>,
    links: Record<string, string>,
  ): Promise<string> {
    const tree: Tree = { files: {}, links: Object.fromEntries(Object.entries(links).sort()) };
    for (const [path, f] of [...files].sort(([a], [b]) => (a < b ? -1 : 1)))
      tree.files[path] = { blob: await this.putBlob(f.data), ...(f.x ? { x: true } : {}) };
    const text = JSON.stringify(tree);
    const hash = sha256(text);
    const path = join(this.root, 'trees', `${hash}.json`);
    if (!existsSync(path)) {
      await mkdir(dirname(path), { recursive: true });
      await writeFile(path, text);
    }
    return hash;
  }

  async tree(hash: string): Promise<Tree> {
    const path = join(this.root, 'trees', `${hash}.json`);
    if (!/^[0-9a-f]{64}$/.test(hash) || !existsSync(path))
      throw new Error(`snapshot ${hash} is not in the store ${this.root}`);
    return Tree.parse(JSON.parse(await readFile(path, 'utf8')));
  }

  async blob(hash: string): Promise<Buffer> {
    return readFile(join(this.root, 'blobs', hash.slice(0, 2), hash));
  }

  /** Writes the snapshot's files into `dir` (which exists) and links its links. */
  async materialize(hash: string, dir: string): Promise<Tree> {
    const tree = await this.tree(hash);
    for (const [path, f] of Object.entries(tree.files)) {
      const full = join(dir, path);
      await mkdir(dirname(full), { recursive: true });
      await writeFile(full, await this.blob(f.blob));
      if (f.x) await chmod(full, 0o755);
    }
    for (const [path, target] of Object.entries(tree.links)) {
      await mkdir(dirname(join(dir, path)), { recursive: true });
      await symlink(target, join(dir, path));
    }
    return tree;
  }
}
