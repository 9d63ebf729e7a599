// Importing a long past session (daemon/import/): a synthetic Claude Code session of N tool-calling
// turns (each tool result ~3 KB of code), read, tokenized with Qwen3's template (every call's prompt is
// the whole history so far) and stored in a temporary SQLite store.
//   import.claude-code  turns, calls, prompt_tokens (all calls), ms (the whole import), ms_per_call,
//                       last_prompt_tokens (the longest prompt), loop_delay_max_ms (the event loop's
//                       longest wait while it ran: what a proxy request could wait), loop_delay_p99_ms
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { importSessionFile, importTokenizer } from '../daemon/import';
import { longClaudeSession } from '../daemon/import/test-sessions';
import { openStore } from '../daemon/store/open';
import { emit, round } from './emit';

export default async function main(): Promise<void> {
  const tokenizer = importTokenizer('Qwen/Qwen3-8B');
  for (const turns of [25, 100]) {
    const dir = mkdtempSync(join(tmpdir(), 'hrl-bench-import-'));
    const file = join(dir, 'session.jsonl');
    writeFileSync(file, longClaudeSession(turns));
    const store = await openStore('sqlite', join(dir, 'store'));
    try {
      const lag = monitorEventLoopDelay({ resolution: 10 });
      lag.enable();
      const t0 = performance.now();
      const r = await importSessionFile(store, file, {
        source: 'claude-code',
        model: 'Qwen/Qwen3-8B',
        tokenizer,
      });
      const ms = performance.now() - t0;
      lag.disable();
      const calls = await store.listRecordingCalls(r.recording_id!);
      emit('import.claude-code', {
        turns,
        calls: r.calls,
        prompt_tokens: calls.reduce((n, c) => n + (c.prompt_ids?.length ?? 0), 0),
        last_prompt_tokens: calls.at(-1)?.prompt_ids?.length ?? 0,
        ms: round(ms, 0),
        ms_per_call: round(ms / r.calls, 1),
        // the longest the event loop (the daemon's proxy requests) waited while the import ran
        loop_delay_max_ms: round(lag.max / 1e6, 0),
        loop_delay_p99_ms: round(lag.percentile(99) / 1e6, 0),
      });
    } finally {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }
}
