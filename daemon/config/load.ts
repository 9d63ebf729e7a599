// Reading harness.yaml / .yml / .json: parse, validate with the protocol schemas, and report every
// problem with its field path and (where the text has one) its line and column, so editors can mark it.
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, resolve } from 'node:path';
import type { Node } from 'yaml';
import type { z } from 'zod';
import { ConfigFile } from '../protocol/config';
import { fieldPath } from '../protocol/fields';

export interface ConfigIssue {
  /** Field path such as `run.algorithm.n` or `run.inference.endpoints[0]`; "" for the file as a whole. */
  path: string;
  message: string;
  /** 1-based, null when the problem has no place in the text. */
  line: number | null;
  column: number | null;
}

export type ConfigResult = { ok: true; config: ConfigFile } | { ok: false; errors: ConfigIssue[] };

/**
 * The YAML parser (229 modules), required the first time YAML text is read or a JSON file's problems
 * are placed, and kept: a valid JSON config (the daemon's, usually) is read without it.
 */
let yamlModule: typeof import('yaml') | undefined;
const yaml = () => (yamlModule ??= createRequire(import.meta.url)('yaml') as typeof import('yaml'));

export const CONFIG_FILE_NAMES = ['harness.yaml', 'harness.yml', 'harness.json'];

/** The text's line and column of the node at `path` (or of the nearest enclosing key that exists). */
function locate(contents: unknown, path: readonly PropertyKey[], atKey: boolean): { offset: number } | null {
  const { isMap, isScalar, isSeq } = yaml();
  let node = contents as Node | null | undefined;
  let offset: number | null = (node as Node | null)?.range?.[0] ?? null;
  for (const [i, segment] of path.entries()) {
    if (isMap(node)) {
      const pair = node.items.find((p) => (isScalar(p.key) ? p.key.value : p.key) === segment);
      if (!pair) break;
      const key = pair.key as Node | null;
      const value = pair.value as Node | null;
      // Point at a scalar value itself, at the key of anything larger (or of an unknown field).
      const last = i === path.length - 1;
      offset = (isScalar(value) && !(last && atKey) ? value.range?.[0] : key?.range?.[0]) ?? offset;
      node = value;
    } else if (isSeq(node) && typeof segment === 'number') {
      const item = node.items[segment] as Node | undefined;
      if (!item) break;
      offset = item.range?.[0] ?? offset;
      node = item;
    } else {
      break;
    }
  }
  return offset === null ? null : { offset };
}

function isBareRun(value: unknown): boolean {
  if (!value || typeof value !== 'object' || Array.isArray(value)) return false;
  const keys = Object.keys(value);
  return keys.length > 0 && !keys.includes('run') && !keys.includes('daemon');
}

/**
 * Validate a config file's text. The file holds a `daemon` and/or a `run` section, or just a run
 * (a file without either key is read as the run itself; paths then start at the run's fields).
 */
export function validateConfigText(text: string, fileName: string): ConfigResult {
  const json = fileName.toLowerCase().endsWith('.json') ? validJson(text) : null;
  if (json) return json;
  const { LineCounter, parseDocument } = yaml();
  const lineCounter = new LineCounter();
  const place = (offset: number | null) => {
    if (offset === null) return { line: null, column: null };
    const pos = lineCounter.linePos(offset);
    return { line: pos.line, column: pos.col };
  };
  if (fileName.toLowerCase().endsWith('.json')) {
    try {
      JSON.parse(text);
    } catch (err) {
      const message = (err as Error).message;
      const position = /position (\d+)/.exec(message);
      parseDocument(text, { lineCounter });
      return {
        ok: false,
        errors: [
          { path: '', message: `invalid JSON: ${message}`, ...place(position ? Number(position[1]) : null) },
        ],
      };
    }
  }
  // JSON is YAML too, so one parser gives positions for both.
  const doc = parseDocument(text, { lineCounter, prettyErrors: false });
  if (doc.errors.length > 0) {
    return {
      ok: false,
      errors: doc.errors.map((e) => ({ path: '', message: e.message.split('\n')[0]!, ...place(e.pos[0]) })),
    };
  }
  const value = doc.toJS() ?? {};
  const bare = isBareRun(value);
  const parsed = ConfigFile.safeParse(bare ? { run: value } : value);
  if (parsed.success) return { ok: true, config: parsed.data };
  return { ok: false, errors: issuesOf(parsed.error, doc.contents, bare, place) };
}

/** A JSON file's config when it parses and validates; null: read it as YAML, which places the problems. */
function validJson(text: string): ConfigResult | null {
  let value: unknown;
  try {
    value = JSON.parse(text) ?? {};
  } catch {
    return null;
  }
  const bare = isBareRun(value);
  const parsed = ConfigFile.safeParse(bare ? { run: value } : value);
  return parsed.success ? { ok: true, config: parsed.data } : null;
}

function issuesOf(
  error: z.ZodError,
  contents: unknown,
  bare: boolean,
  place: (offset: number | null) => { line: number | null; column: number | null },
): ConfigIssue[] {
  const out: ConfigIssue[] = [];
  for (const issue of error.issues) {
    const paths =
      issue.code === 'unrecognized_keys' ? issue.keys.map((k) => [...issue.path, k]) : [[...issue.path]];
    for (const path of paths) {
      const inText = bare ? path.slice(1) : path;
      const message =
        issue.code === 'unrecognized_keys' ? `unknown field ${JSON.stringify(path.at(-1))}` : issue.message;
      const at = locate(contents, inText, issue.code === 'unrecognized_keys');
      out.push({ path: fieldPath(inText), message, ...place(at?.offset ?? null) });
    }
  }
  return out;
}

export class ConfigError extends Error {
  constructor(
    readonly file: string,
    readonly errors: ConfigIssue[],
  ) {
    super(
      `${file} is not a valid config:\n${errors
        .map(
          (e) =>
            `  ${file}${e.line ? `:${e.line}:${e.column}` : ''}: ${e.path ? `${e.path}: ` : ''}${e.message}`,
        )
        .join('\n')}`,
    );
  }
}

/** Read and validate a config file; relative paths in it resolve against `baseDir` (its folder). */
export async function loadConfigFile(
  file: string,
): Promise<{ config: ConfigFile; baseDir: string; file: string }> {
  const path = resolve(file);
  const text = await readFile(path, 'utf8');
  const result = validateConfigText(text, path);
  if (!result.ok) throw new ConfigError(path, result.errors);
  return { config: result.config, baseDir: dirname(path), file: path };
}
