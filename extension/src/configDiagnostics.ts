// Validates a run config file (YAML or JSON) with the daemon's own RunConfig schema and maps
// every zod issue to the line and column of the YAML node it names. No vscode import (unit tested).
import { isMap, isNode, isPair, isScalar, LineCounter, parseDocument, type Node as YamlNode } from 'yaml';
import type { z } from 'zod';
import { RunConfig } from '../../daemon/protocol/config';

export interface ConfigProblem {
  message: string;
  /** zod path joined with dots, e.g. "algorithm.n" */
  path: string;
  /** 0-based */
  line: number;
  col: number;
  endLine: number;
  endCol: number;
}

export interface ConfigCheck {
  config?: RunConfig;
  problems: ConfigProblem[];
}

/**
 * A file may be a bare RunConfig or a config file with a `run:` section (and maybe `daemon:`).
 * Returns the parsed config when valid, else the problems with positions.
 */
export function checkRunConfig(text: string, fileExists?: (relative: string) => boolean): ConfigCheck {
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, prettyErrors: false });
  const pos = (offset: number) => {
    const p = lineCounter.linePos(offset);
    return { line: p.line - 1, col: p.col - 1 };
  };
  const span = (range: [number, number, number?] | undefined | null, message: string, path: string) => {
    const [a, b] = range ?? [0, 0];
    const s = pos(a);
    const e = pos(Math.max(a, b));
    return { message, path, line: s.line, col: s.col, endLine: e.line, endCol: e.col };
  };
  if (doc.errors.length > 0) {
    return {
      problems: doc.errors.map((e) => span([e.pos[0], e.pos[1]], `syntax: ${e.message.split('\n')[0]}`, '')),
    };
  }
  const data = doc.toJS() as unknown;
  const prefix: (string | number)[] =
    data && typeof data === 'object' && !Array.isArray(data) && 'run' in data ? ['run'] : [];
  const value = prefix.length ? (data as { run: unknown }).run : data;
  const parsed = RunConfig.safeParse(value);
  if (parsed.success) {
    const missing = fileExists && !fileExists(parsed.data.tasks.file);
    if (!missing) return { config: parsed.data, problems: [] };
    // the daemon would refuse the run for it: mark it where it is written, not in a toast
    const path = [...prefix, 'tasks', 'file'];
    const { node } = locate(doc.contents, path, { code: 'custom' } as z.core.$ZodIssue);
    const message = `${path.join('.')}: no file ${parsed.data.tasks.file} next to this config`;
    return { problems: [span(node?.range as [number, number] | undefined, message, 'tasks.file')] };
  }
  const problems = parsed.error.issues.map((issue) => {
    const path = [...prefix, ...issue.path.map((p) => (typeof p === 'symbol' ? String(p) : p))];
    const label = path.join('.') || '(root)';
    const { node, keyNode } = locate(doc.contents, path, issue);
    return span(
      (keyNode ?? node)?.range as [number, number] | undefined,
      `${label}: ${issue.message}`,
      issue.path.join('.'),
    );
  });
  return { problems };
}

/** The deepest node along `path`; for unknown keys the offending key itself. */
function locate(
  root: unknown,
  path: (string | number)[],
  issue: z.core.$ZodIssue,
): { node: YamlNode | undefined; keyNode?: YamlNode } {
  let node: YamlNode | undefined = isNode(root) ? root : undefined;
  let keyNode: YamlNode | undefined;
  for (const key of path) {
    const next = childOf(node, key);
    if (!next) {
      // missing key: point at the parent's key (or the parent map)
      return { node, keyNode };
    }
    node = next.value;
    keyNode = next.key;
  }
  if (issue.code === 'unrecognized_keys' && isMap(node)) {
    const bad = issue.keys[0];
    const pair = node.items.find((p) => isPair(p) && isScalar(p.key) && String(p.key.value) === bad);
    if (pair && isNode(pair.key)) return { node: pair.key };
  }
  // prefer the value for wrong values, the key when the value is absent
  return { node: node ?? keyNode, keyNode: node ? undefined : keyNode };
}

function childOf(
  node: YamlNode | undefined,
  key: string | number,
): { key?: YamlNode; value: YamlNode | undefined } | undefined {
  if (!node || !('items' in node)) return undefined;
  const items = (node as { items: unknown[] }).items;
  if (typeof key === 'number') {
    const item = items[key];
    return isNode(item) ? { value: item } : undefined;
  }
  for (const p of items) {
    if (isPair(p) && isScalar(p.key) && String(p.key.value) === key) {
      return { key: isNode(p.key) ? p.key : undefined, value: isNode(p.value) ? p.value : undefined };
    }
  }
  return undefined;
}

/**
 * Whether a YAML or JSON text is a run config: `name` and `tasks` at the top, or under `run`
 * (a JSON Schema or another tool's file with such keys nested deeper is not).
 */
export function isRunConfigText(text: string): boolean {
  if (!/\btasks\b/.test(text) || text.length > 1_000_000) return false;
  let data: unknown;
  try {
    data = parseDocument(text, { prettyErrors: false }).toJS();
  } catch {
    return false;
  }
  const obj = (v: unknown): v is Record<string, unknown> =>
    typeof v === 'object' && v !== null && !Array.isArray(v);
  if (!obj(data)) return false;
  const run = obj(data.run) ? data.run : data;
  return 'name' in run && 'tasks' in run && !('$schema' in data && 'properties' in data);
}
