// Importing a long past session (daemon/import/): a synthetic Claude Code session of N tool-calling
// turns (each tool result ~3 KB of code; `sub_agent_lines`: a sub-agent's lines read and left out),
// read, tokenized with Qwen3's template (every call's prompt is the whole history so far) and stored
// in a temporary SQLite store, by this checkout and by a baseline's (BENCH_BASELINE, a git revision:
// by default 3b8db66, which parsed and tokenized on the daemon's event loop in slices), each in a
// child process of its own (with the daemon's V8 flags), one after the other.
//   import.claude-code  turns, sub_agent_lines, file_mb, calls, prompt_tokens (all calls),
//                       last_prompt_tokens, ms (the whole import), ms_per_call, loop_delay_max_ms
//                       (the event loop's longest wait while it ran: what a proxy request could
//                       wait), loop_delay_p99_ms, idle_loop_delay_max_ms (the longest wait of a second
//                       of idling just before: the machine's share, a loaded machine's is tens of ms);
//                       baseline, and baseline_ms, baseline_loop_delay_*: the same for the baseline
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DAEMON_NODE_FLAGS } from '../daemon/cli/node-flags';
import { longClaudeSession } from '../daemon/import/test-sessions';
import { child, emit, root, round } from './emit';

const SCRIPT = `await import(${JSON.stringify(join(root, 'bench/servers/import.ts'))});`;

async function importIn(checkout: string, file: string, warmUp: string): Promise<Record<string, number>> {
  const { proc, info } = await child(
    SCRIPT,
    { FROM: checkout, FILE: file, WARM_UP: warmUp },
    DAEMON_NODE_FLAGS,
  );
  await new Promise((resolve) => proc.once('exit', resolve));
  return info as unknown as Record<string, number>;
}

export default async function main(): Promise<void> {
  const rev = process.env.BENCH_BASELINE ?? '3b8db66';
  const baseline = mkdtempSync(join(tmpdir(), 'harness-rl-baseline-'));
  execFileSync('git', ['worktree', 'add', '--detach', '--force', baseline, rev], {
    cwd: root,
    stdio: 'ignore',
  });
  symlinkSync(join(root, 'node_modules'), join(baseline, 'node_modules'));
  const dir = mkdtempSync(join(tmpdir(), 'hrl-bench-import-'));
  try {
    const warmUp = join(dir, 'warm-up.jsonl');
    writeFileSync(warmUp, longClaudeSession(1).replaceAll('"sessionId":"bench"', '"sessionId":"warm-up"'));
    for (const [turns, subAgentLines] of [
      [25, 0],
      [100, 0],
      [100, 20_000],
    ]) {
      const file = join(dir, 'session.jsonl');
      const text = longClaudeSession(turns, subAgentLines);
      writeFileSync(file, text);
      const now = await importIn(root, file, warmUp);
      const before = await importIn(baseline, file, warmUp);
      emit('import.claude-code', {
        turns,
        sub_agent_lines: subAgentLines,
        file_mb: round(text.length / 2 ** 20, 1),
        calls: now.calls,
        prompt_tokens: now.prompt_tokens,
        last_prompt_tokens: now.last_prompt_tokens,
        ms: round(now.ms, 0),
        ms_per_call: round(now.ms / now.calls, 1),
        loop_delay_max_ms: round(now.loop_delay_max_ms, 1),
        loop_delay_p99_ms: round(now.loop_delay_p99_ms, 1),
        idle_loop_delay_max_ms: round(now.idle_loop_delay_max_ms, 1),
        baseline: rev,
        baseline_ms: round(before.ms, 0),
        baseline_loop_delay_max_ms: round(before.loop_delay_max_ms, 1),
        baseline_loop_delay_p99_ms: round(before.loop_delay_p99_ms, 1),
        baseline_idle_loop_delay_max_ms: round(before.idle_loop_delay_max_ms, 1),
      });
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
    execFileSync('git', ['worktree', 'remove', '--force', baseline], { cwd: root });
  }
}
