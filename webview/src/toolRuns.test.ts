import { describe, expect, it } from 'vitest';
import type { ToolRun } from '../../daemon/protocol/entities';
import { placeToolRuns, toolRunLine } from './toolRuns';

const run = (tool: string, started_at: string, over: Partial<ToolRun> = {}): ToolRun => ({
  id: `tool_${tool}`,
  rollout_id: 'ro_1',
  tool,
  call_id: null,
  started_at,
  duration_ms: 53.4,
  success: true,
  result_bytes: 167,
  error: null,
  source: 'claude_code.tool_result',
  agent: 'claude-code',
  attributes: {},
  created_at: started_at,
  ...over,
});

describe('tool runs on the trajectory', () => {
  it('each tool run shows between the call that asked for it and the next one', () => {
    const calls = [{ created_at: '2026-12-07T00:00:01.000Z' }, { created_at: '2026-12-07T00:00:05.000Z' }];
    const placed = placeToolRuns(calls, [
      run('Read', '2026-12-07T00:00:06.000Z'),
      run('Write', '2026-12-07T00:00:02.000Z'),
      run('Bash', '2026-12-07T00:00:01.500Z'),
      run('Setup', '2026-12-07T00:00:00.500Z'),
    ]);
    expect(placed.before.map((t) => t.tool)).toEqual(['Setup']);
    expect(placed.after.map((ts) => ts.map((t) => t.tool))).toEqual([['Bash', 'Write'], ['Read']]);
  });

  it('says the tool, its duration, its outcome and the size of its result', () => {
    expect(toolRunLine(run('Write', '2026-12-07T00:00:00.000Z'))).toBe('Write · 53 ms · ok · 167 B result');
    expect(
      toolRunLine(
        run('Bash', '2026-12-07T00:00:00.000Z', { success: false, result_bytes: 12_345, duration_ms: null }),
      ),
    ).toBe('Bash · failed · 12.3 KB result');
  });
});
