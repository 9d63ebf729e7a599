// The tool runs a harness reported over OTLP, placed between the llm calls they ran between (pure).
import type { LlmCall, ToolRun } from '../../daemon/protocol/entities';

/**
 * For calls sorted by seq: `before` holds the runs that started before the first call was recorded,
 * `after[i]` those that started after call i was recorded and before call i + 1 (a call is recorded
 * as its response ends, so a tool the model asked for starts after its call and before the next).
 */
export function placeToolRuns(
  calls: readonly Pick<LlmCall, 'created_at'>[],
  runs: readonly ToolRun[],
): { before: ToolRun[]; after: ToolRun[][] } {
  const ends = calls.map((c) => Date.parse(c.created_at));
  const before: ToolRun[] = [];
  const after: ToolRun[][] = calls.map(() => []);
  const sorted = [...runs].sort((a, b) => Date.parse(a.started_at) - Date.parse(b.started_at));
  for (const run of sorted) {
    const start = Date.parse(run.started_at);
    let i = -1;
    while (i + 1 < ends.length && ends[i + 1] <= start) i++;
    if (i < 0) before.push(run);
    else after[i].push(run);
  }
  return { before, after };
}

/** 1234 → "1.2 KB" (the result size as people read it). */
export function bytes(n: number): string {
  if (n < 1000) return `${n} B`;
  if (n < 1_000_000) return `${(n / 1000).toFixed(1)} KB`;
  return `${(n / 1_000_000).toFixed(1)} MB`;
}

/** "Write · 53 ms · ok · 167 B result" */
export function toolRunLine(t: ToolRun): string {
  return [
    t.tool,
    t.duration_ms === null ? null : `${Math.round(t.duration_ms)} ms`,
    t.success === null ? null : t.success ? 'ok' : 'failed',
    t.result_bytes === null ? null : `${bytes(t.result_bytes)} result`,
  ]
    .filter(Boolean)
    .join(' · ');
}
