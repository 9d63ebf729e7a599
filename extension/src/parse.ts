// Small parsers behind user input (pure; unit tested).

/** "a..b", "a..", "..b", "" → bounds; undefined when malformed. */
export function parseRange(v: string): { min?: number; max?: number } | undefined {
  const s = v.trim();
  if (s === '') return {};
  const m = /^(-?[\d.eE+-]*)\s*\.\.\s*(-?[\d.eE+-]*)$/.exec(s);
  if (!m) return Number.isFinite(Number(s)) ? { min: Number(s), max: Number(s) } : undefined;
  const min = m[1] === '' ? undefined : Number(m[1]);
  const max = m[2] === '' ? undefined : Number(m[2]);
  if ((min !== undefined && !Number.isFinite(min)) || (max !== undefined && !Number.isFinite(max)))
    return undefined;
  return { min, max };
}

/** Parses a verifier's result: the last number printed on stdout, else exit code 0 → 1, other → 0. */
export function verifierReward(stdout: string, exitCode: number | null): number {
  const lines = stdout.trim().split(/\r?\n/).reverse();
  for (const line of lines) {
    const n = Number(line.trim());
    if (line.trim() !== '' && Number.isFinite(n)) return n;
  }
  return exitCode === 0 ? 1 : 0;
}
