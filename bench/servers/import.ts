// One session import, for bench/import.ts: FROM's daemon/import (this checkout's, or a baseline's
// worktree) imports FILE (a Claude Code session) into a new SQLite store while the event loop's delay
// is watched (after WARM_UP, a small session with another session id, and a second of idling, whose
// longest wait is the machine's share); prints {ms, calls, prompt_tokens, last_prompt_tokens, loop_delay_max_ms, loop_delay_p99_ms,
// idle_loop_delay_max_ms}.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';

const from = process.env.FROM ?? '';
const file = process.env.FILE ?? '';
const warmUp = process.env.WARM_UP ?? '';
const imports = await import(pathToFileURL(join(from, 'daemon/import/index.ts')).href);
const { openStore } = await import(pathToFileURL(join(from, 'daemon/store/open.ts')).href);
const model = 'Qwen/Qwen3-8B';
// a checkout from before the import thread takes the tokenizer (loaded here, before the watch)
const tokenizer = imports.importModelFolder ? undefined : imports.importTokenizer(model);
await tokenizer?.encode('loaded');
const dir = mkdtempSync(join(tmpdir(), 'hrl-bench-import-'));
const store = await openStore('sqlite', join(dir, 'store'));
try {
  // a small session first: the import thread started and its tokenizer loaded, as in a daemon that imported before
  await imports.importSessionFile(store, warmUp, { source: 'claude-code', model, tokenizer });
  // the machine's own share of the delay: the loop's longest wait for a second of doing nothing
  const idle = monitorEventLoopDelay({ resolution: 5 });
  idle.enable();
  await new Promise((resolve) => setTimeout(resolve, 1000));
  idle.disable();
  const lag = monitorEventLoopDelay({ resolution: 5 });
  lag.enable();
  const t0 = performance.now();
  const r = await imports.importSessionFile(store, file, { source: 'claude-code', model, tokenizer });
  const ms = performance.now() - t0;
  lag.disable();
  if (r.status !== 'imported') throw new Error(`import ${r.status}: ${r.error}`);
  const calls: { prompt_ids: number[] | null }[] = await store.listRecordingCalls(r.recording_id);
  process.stdout.write(
    `${JSON.stringify({
      ms,
      calls: r.calls,
      prompt_tokens: calls.reduce((n, c) => n + (c.prompt_ids?.length ?? 0), 0),
      last_prompt_tokens: calls.at(-1)?.prompt_ids?.length ?? 0,
      loop_delay_max_ms: lag.max / 1e6,
      loop_delay_p99_ms: lag.percentile(99) / 1e6,
      idle_loop_delay_max_ms: idle.max / 1e6,
    })}\n`,
  );
} finally {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
  await imports.stopImportThread?.();
}
