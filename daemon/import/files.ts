// Where each CLI keeps its sessions, and which of them an import takes: Claude Code's
// `$CLAUDE_CONFIG_DIR/projects` (default ~/.claude/projects), one folder per project (its path with
// every character but letters and digits as `-`) of `<session id>.jsonl`; Codex's
// `$CODEX_HOME/sessions` (default ~/.codex/sessions), `YYYY/MM/DD/rollout-<time>-<session id>.jsonl`,
// or `.jsonl.zst` where Codex compressed it (zstd; Node 20's zlib has none: fzstd, pure JS).
import { createReadStream } from 'node:fs';
import { readdir, readFile, stat } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import type { ImportSource } from './session';

export interface SessionFile {
  path: string;
  /** The session id its name gives (Claude Code: the name; Codex: the id after the time). */
  session_id: string;
  size: number;
  modified_at: string;
}

/** The folder a source keeps its sessions in, for a given environment (the caller's, not the daemon's). */
export function sessionsRoot(
  source: ImportSource,
  env: Record<string, string | undefined> = process.env,
): string {
  const home = env.HOME || homedir();
  if (source === 'claude-code') return join(env.CLAUDE_CONFIG_DIR || join(home, '.claude'), 'projects');
  return join(env.CODEX_HOME || join(home, '.codex'), 'sessions');
}

/** Claude Code's folder name for a project path (`/home/a/my.app` → `-home-a-my-app`). */
export function claudeProjectFolder(dir: string): string {
  return resolve(dir).replace(/[^A-Za-z0-9]/g, '-');
}

/** Claude Code cuts a folder name longer than 200 characters there and adds a hash of the path. */
const sameProject = (name: string, wanted: string) =>
  name === wanted || (wanted.length > 200 && name.startsWith(wanted.slice(0, 200)));

async function entries(dir: string) {
  try {
    return await readdir(dir, { withFileTypes: true });
  } catch {
    return [];
  }
}

const CODEX_NAME =
  /^rollout-.*?([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\.jsonl(\.zst)?$/;

const ZSTD = /\.zst$/;

/**
 * A session file's text, decompressed where it is zstd (`.zst`): 64 KiB at a time, so the event loop
 * has turns between the pieces (fzstd decodes synchronously).
 */
export async function readSessionText(path: string): Promise<string> {
  if (!ZSTD.test(path)) return readFile(path, 'utf8');
  // fzstd loads with the first compressed session: a daemon that imports none never holds it
  const { Decompress } = await import('fzstd');
  const decoder = new TextDecoder('utf-8', { fatal: false });
  let text = '';
  const zstd = new Decompress((data) => {
    text += decoder.decode(data, { stream: true });
  });
  for await (const chunk of createReadStream(path, { highWaterMark: 64 * 1024 })) zstd.push(chunk as Buffer);
  zstd.push(new Uint8Array(0), true);
  return text + decoder.decode();
}

/** The first line of a file (Codex's session meta names the session's folder). */
async function firstLine(path: string): Promise<string> {
  if (ZSTD.test(path)) return (await readSessionText(path)).split('\n', 1)[0];
  const lines = createInterface({ input: createReadStream(path, { encoding: 'utf8' }), crlfDelay: Infinity });
  try {
    for await (const line of lines) return line;
    return '';
  } finally {
    lines.close();
  }
}

async function codexCwd(path: string): Promise<string | null> {
  try {
    const v = JSON.parse(await firstLine(path));
    const meta = v?.payload ?? v;
    return typeof meta?.cwd === 'string' ? resolve(meta.cwd) : null;
  } catch {
    return null;
  }
}

/**
 * The session files of a source under `root`, oldest change first: changed since `since` (an ISO date
 * or time) when given, of the project folder `project` when given. `_skipped` was for the files that
 * look like sessions but could not be read here (zstd rollouts, read since fzstd): the API keeps it.
 */
export async function findSessions(
  source: ImportSource,
  root: string,
  filter: { since?: string; project?: string } = {},
  _skipped: string[] = [],
): Promise<SessionFile[]> {
  const paths: { path: string; id: string }[] = [];
  if (source === 'claude-code') {
    const wanted = filter.project ? claudeProjectFolder(filter.project) : null;
    for (const p of await entries(root)) {
      if (!p.isDirectory() || (wanted && !sameProject(p.name, wanted))) continue;
      for (const f of await entries(join(root, p.name)))
        if (f.isFile() && f.name.endsWith('.jsonl'))
          paths.push({ path: join(root, p.name, f.name), id: f.name.slice(0, -'.jsonl'.length) });
    }
  } else {
    // only the YYYY/MM/DD folders: a root that is not Codex's is not walked through
    const walk = async (dir: string, depth: number): Promise<void> => {
      for (const e of await entries(dir)) {
        if (e.isDirectory() && depth < 3 && /^\d+$/.test(e.name)) await walk(join(dir, e.name), depth + 1);
        else if (e.isFile() && CODEX_NAME.test(e.name))
          paths.push({ path: join(dir, e.name), id: CODEX_NAME.exec(e.name)![1] });
      }
    };
    await walk(root, 0);
  }
  const since = filter.since ? Date.parse(filter.since) : null;
  const project = filter.project ? resolve(filter.project) : null;
  const out: SessionFile[] = [];
  for (const p of paths) {
    const s = await stat(p.path).catch(() => null);
    if (!s || (since !== null && s.mtimeMs < since)) continue;
    if (source === 'codex' && project && (await codexCwd(p.path)) !== project) continue;
    out.push({ path: p.path, session_id: p.id, size: s.size, modified_at: s.mtime.toISOString() });
  }
  return out.sort((a, b) => a.modified_at.localeCompare(b.modified_at) || a.path.localeCompare(b.path));
}
