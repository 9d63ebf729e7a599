/** Print one benchmark figure as a JSON line: {"bench": name, ...numbers}. */
export function emit(bench: string, figures: Record<string, number | string | boolean | null>): void {
  process.stdout.write(`${JSON.stringify({ bench, ...figures })}\n`);
}

/** The q-quantile (0..1) of a list of numbers. */
export function quantile(values: number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
}

export const round = (x: number, digits = 3): number => Number(x.toFixed(digits));
