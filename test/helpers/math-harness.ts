// Variants of the evolve example's math harness (examples/evolve/harness/agent.mjs) whose control flow
// changes the score at a fixed model version: no answer extraction, a retry on malformed answers, a
// shorter prompt. Each is the baseline with a few lines edited, written to a folder of its own.
import { cpSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

export const EXAMPLE = resolve(__dirname, '../../examples/evolve');
export const BASELINE = join(EXAMPLE, 'harness');

export const EDITS = {
  /** No answer extraction: the reply as it came. */
  raw: [["  return (text.match(/\\d/) ?? [''])[0];", '  return text.trim();']],
  /** The example's harness as it is (the first digit of the reply is the answer). */
  extract: [],
  /** Ask again (up to 4 times) while the reply holds no digit. */
  retry: [
    ['const MAX_TRIES = 1;', 'const MAX_TRIES = 4;'],
    ['  return answer.length > 0;', '  return /^\\d$/.test(answer);'],
  ],
  /** The question alone, without the instructions. */
  short: [
    [
      'You are a careful calculator. Read the question, work it out, and reply with the result as a single digit and nothing else. Question: ',
      '',
    ],
  ],
} satisfies Record<string, [string, string][]>;

export type Variant = keyof typeof EDITS;

/** The baseline harness with `variant`'s edits, copied into `dir`; returns dir. */
export function writeVariant(variant: Variant, dir: string): string {
  cpSync(BASELINE, dir, { recursive: true });
  const file = join(dir, 'agent.mjs');
  let text = readFileSync(file, 'utf8');
  for (const [from, to] of EDITS[variant] as [string, string][]) {
    if (!text.includes(from))
      throw new Error(`${variant}: the baseline no longer has ${JSON.stringify(from)}`);
    text = text.replace(from, to);
  }
  writeFileSync(file, text);
  return dir;
}
