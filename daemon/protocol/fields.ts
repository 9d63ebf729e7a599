// How errors name a field everywhere (REST, the proxy, config files): `a.b[0].c`, from zod's paths.
import type { z } from 'zod';

export function fieldPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const part of path) {
    if (typeof part === 'number') out += `[${part}]`;
    else out += out ? `.${String(part)}` : String(part);
  }
  return out;
}

/** The field an issue is about: its path, or for unknown keys the (first) key itself. */
export function issueField(issue: z.core.$ZodIssue, prefix: readonly PropertyKey[] = []): string {
  const path = [...prefix, ...issue.path];
  if (issue.code === 'unrecognized_keys' && issue.keys.length > 0) path.push(issue.keys[0]!);
  return fieldPath(path);
}
