// Harness folders as snapshots: read into a path → text map (what a candidate is), content-addressed
// by SHA-256 of its sorted paths and texts, and written back out as a working copy.
import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, sep } from 'node:path';
import type { Tree } from './diff';

/** Folders a harness snapshot leaves out; files past MAX_FILE_BYTES are refused (a harness is source). */
const SKIP = new Set(['node_modules', '.git', '.venv', '__pycache__', '.harness-rl']);
const MAX_FILE_BYTES = 1024 * 1024;
const MAX_FILES = 2000;

export function readTree(dir: string): Tree {
  const tree: Tree = new Map();
  const walk = (at: string) => {
    for (const entry of readdirSync(at, { withFileTypes: true })) {
      if (SKIP.has(entry.name)) continue;
      const path = join(at, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.isFile()) {
        if (statSync(path).size > MAX_FILE_BYTES)
          throw new Error(`${path} is over ${MAX_FILE_BYTES} bytes: a harness snapshot holds source files`);
        if (tree.size >= MAX_FILES) throw new Error(`${dir} has over ${MAX_FILES} files`);
        tree.set(relative(dir, path).split(sep).join('/'), readFileSync(path, 'utf8'));
      }
    }
  };
  walk(dir);
  return tree;
}

/** The content address of a tree: SHA-256 over its sorted (path, text) pairs, first 24 hex digits. */
export function treeHash(tree: Tree): string {
  const h = createHash('sha256');
  for (const path of [...tree.keys()].sort()) {
    const text = tree.get(path)!;
    h.update(`${path}\0${Buffer.byteLength(text)}\0`).update(text);
  }
  return h.digest('hex').slice(0, 24);
}

/** Write `tree` into `dir`, which is emptied first. */
export function writeTree(dir: string, tree: Tree): void {
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  for (const [path, text] of tree) {
    const file = join(dir, ...path.split('/'));
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, text);
  }
}
