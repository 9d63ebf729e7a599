// `tasks import`: SWE-bench / SWE-Gym / SWE-smith style JSONL for repositories the person has locally.
// Each instance's `repo` (owner/name) is looked up under --repos (as name, owner__name or owner/name),
// its `base_commit` must be in that clone; the tree at that commit goes into the snapshot store and the
// instance gains its harness_rl field. An instance whose repository or commit is missing is refused,
// by name, and the others are still imported.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { promisify } from 'node:util';
import type { TaskInstance } from '../protocol/tasks';
import { readRepo, SnapshotStore } from './snapshot';
import { readTasks } from './swe-format';

const exec = promisify(execFile);

export interface ImportOptions {
  file: string;
  repos: string;
  testCmd: string;
  out: string;
  store?: string;
  timeoutS?: number;
  onRefused?: (instanceId: string, why: string) => void;
}

/** The local clone of `repo` (owner/name) under `root`, or undefined. */
export function findClone(root: string, repo: string): string | undefined {
  const [owner, name] = repo.includes('/') ? repo.split('/', 2) : [undefined, repo];
  const candidates = [name!, ...(owner ? [`${owner}__${name}`, join(owner, name!)] : [])].map((c) =>
    join(root, c),
  );
  return candidates.find((c) => existsSync(join(c, '.git')));
}

async function hasCommit(clone: string, commit: string): Promise<boolean> {
  try {
    await exec('git', ['-C', clone, 'cat-file', '-e', `${commit}^{commit}`]);
    return true;
  } catch {
    return false;
  }
}

/** The tree of `clone` at `commit`, into the store. */
async function snapshotAt(store: SnapshotStore, clone: string, commit: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'harness-rl-import-'));
  try {
    await exec('sh', ['-c', `git -C "$1" archive "$2" | tar -x -C "$3"`, 'sh', clone, commit, dir], {
      maxBuffer: 1 << 20,
    });
    const { files, links } = await readRepo(dir);
    return await store.put(files, links);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

export async function importTasks(
  o: ImportOptions,
): Promise<{ imported: number; refused: number; out: string }> {
  const instances = await readTasks(o.file);
  const storeDir = resolve(o.store ?? join(dirname(resolve(o.out)), 'snapshots'));
  const store = new SnapshotStore(storeDir);
  const out: TaskInstance[] = [];
  let refused = 0;
  const refuse = (id: string, why: string) => {
    refused++;
    o.onRefused?.(id, why);
  };
  for (const inst of instances) {
    const clone = findClone(resolve(o.repos), inst.repo);
    if (!clone) {
      refuse(
        inst.instance_id,
        `repository ${inst.repo} is not under ${o.repos} (as ${inst.repo.split('/').at(-1)}, ${inst.repo.replace('/', '__')} or ${inst.repo})`,
      );
      continue;
    }
    if (!(await hasCommit(clone, inst.base_commit))) {
      refuse(
        inst.instance_id,
        `commit ${inst.base_commit} of ${inst.repo} is not in ${clone} (git fetch it first)`,
      );
      continue;
    }
    const snapshot = await snapshotAt(store, clone, inst.base_commit);
    out.push({
      ...inst,
      harness_rl: {
        snapshot,
        store: relative(dirname(resolve(o.out)), storeDir) || '.',
        test_cmd: o.testCmd,
        timeout_s: o.timeoutS ?? 300,
      },
    });
  }
  await mkdir(dirname(resolve(o.out)), { recursive: true });
  await writeFile(o.out, out.map((t) => `${JSON.stringify(t)}\n`).join(''));
  return { imported: out.length, refused, out: o.out };
}
