// Line diffs between two harness folders (as path → text maps): unified hunks with 3 lines of context
// (each stored line keeps its newline, so a missing final newline survives),
// applied back exactly (a candidate is stored as the patch against its parent), counted for the edit
// budget, and rendered as unified diff text. LCS by dynamic programming: harness files are small.
import type { FilePatch } from '../protocol/evolution';

export type Tree = Map<string, string>;
type Hunk = FilePatch['hunks'][number];

const CONTEXT = 3;
/** Past this many LCS cells a file is replaced whole (one hunk). */
const MAX_CELLS = 4_000_000;

/** Lines with their newlines (a last line may have none), so joining them gives the text back exactly. */
const splitLines = (text: string): string[] => text.match(/[^\n]*\n|[^\n]+$/g) ?? [];
/** A stored hunk line without its newline, as diff text shows it. */
const shown = (line: string): string =>
  line.endsWith('\n') ? line.slice(0, -1) : `${line}\n\\ No newline at end of file`;

/** The edit script of two line lists: ' ' kept, '-' removed, '+' added, in order. */
function editScript(a: string[], b: string[]): string[] {
  if (a.length * b.length > MAX_CELLS) return [...a.map((l) => `-${l}`), ...b.map((l) => `+${l}`)];
  const n = a.length;
  const m = b.length;
  const lcs = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
  for (let i = n - 1; i >= 0; i--)
    for (let j = m - 1; j >= 0; j--)
      lcs[i]![j] = a[i] === b[j] ? lcs[i + 1]![j + 1]! + 1 : Math.max(lcs[i + 1]![j]!, lcs[i]![j + 1]!);
  const out: string[] = [];
  let i = 0;
  let j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && a[i] === b[j]) {
      out.push(` ${a[i++]}`);
      j++;
    } else if (i < n && (j === m || lcs[i + 1]![j]! >= lcs[i]![j + 1]!)) out.push(`-${a[i++]}`);
    else out.push(`+${b[j++]}`);
  }
  return out;
}

/** Group an edit script into hunks with CONTEXT lines around each change. */
function hunksOf(script: string[]): Hunk[] {
  const hunks: Hunk[] = [];
  const changed = script.map((l) => l[0] !== ' ');
  let oldLine = 1;
  let newLine = 1;
  const positions = script.map((l) => {
    const at = { old: oldLine, new: newLine };
    if (l[0] !== '+') oldLine++;
    if (l[0] !== '-') newLine++;
    return at;
  });
  let k = 0;
  while (k < script.length) {
    if (!changed[k]) {
      k++;
      continue;
    }
    const start = Math.max(0, k - CONTEXT);
    let end = k;
    // Extend while another change comes within 2·CONTEXT kept lines.
    for (let q = k; q < script.length; q++) {
      if (changed[q]) end = q;
      else if (q - end > 2 * CONTEXT) break;
    }
    const stop = Math.min(script.length, end + CONTEXT + 1);
    const lines = script.slice(start, stop);
    hunks.push({
      old_start: positions[start]!.old,
      old_lines: lines.filter((l) => l[0] !== '+').length,
      new_start: positions[start]!.new,
      new_lines: lines.filter((l) => l[0] !== '-').length,
      lines,
    });
    k = stop;
  }
  return hunks;
}

/** The patch that turns `from` into `to` (files sorted by path). */
export function diffTrees(from: Tree, to: Tree): FilePatch[] {
  const paths = [...new Set([...from.keys(), ...to.keys()])].sort();
  const patches: FilePatch[] = [];
  for (const path of paths) {
    const a = from.get(path);
    const b = to.get(path);
    if (a === b) continue;
    const hunks = hunksOf(editScript(splitLines(a ?? ''), splitLines(b ?? '')));
    patches.push({ path, hunks, ...(b === undefined ? { deleted: true } : {}) });
  }
  return patches;
}

/** Apply a patch made by diffTrees to the tree it was made from; throws when it does not fit. */
export function applyPatch(from: Tree, patches: FilePatch[]): Tree {
  const out = new Map(from);
  for (const p of patches) {
    if (p.deleted) {
      out.delete(p.path);
      continue;
    }
    const old = splitLines(from.get(p.path) ?? '');
    const result: string[] = [];
    let at = 0; // index into old
    for (const h of p.hunks) {
      const begin = h.old_lines === 0 ? h.old_start : h.old_start - 1;
      result.push(...old.slice(at, begin));
      at = begin;
      for (const line of h.lines) {
        if (line[0] === '+') result.push(line.slice(1));
        else {
          if (old[at] !== line.slice(1))
            throw new Error(`${p.path}: the patch does not fit at line ${at + 1}`);
          if (line[0] === ' ') result.push(old[at]!);
          at++;
        }
      }
    }
    result.push(...old.slice(at));
    out.set(p.path, result.join(''));
  }
  return out;
}

/** Files, hunks and lines (added + removed) a patch changes: what the edit budget counts. */
export function patchStats(patches: FilePatch[]): { files: number; hunks: number; lines: number } {
  let hunks = 0;
  let lines = 0;
  for (const p of patches) {
    hunks += p.hunks.length;
    for (const h of p.hunks) lines += h.lines.filter((l) => l[0] !== ' ').length;
  }
  return { files: patches.length, hunks, lines };
}

/** The added lines of a patch (what a leak check reads). */
export function addedLines(patches: FilePatch[]): string[] {
  return patches.flatMap((p) =>
    p.hunks.flatMap((h) => h.lines.filter((l) => l[0] === '+').map((l) => l.slice(1).replace(/\n$/, ''))),
  );
}

/** The patch as unified diff text (a/ and b/ prefixes, like git). */
export function unifiedDiff(patches: FilePatch[]): string {
  const out: string[] = [];
  for (const p of patches) {
    out.push(`--- a/${p.path}`, `+++ ${p.deleted ? '/dev/null' : `b/${p.path}`}`);
    for (const h of p.hunks) {
      out.push(
        `@@ -${h.old_start},${h.old_lines} +${h.new_start},${h.new_lines} @@`,
        ...h.lines.map((l) => l[0] + shown(l.slice(1))),
      );
    }
  }
  return out.length ? `${out.join('\n')}\n` : '';
}
