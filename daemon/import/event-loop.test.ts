// Importing a long past session shares the daemon's event loop: the proxy's requests wait at most a
// slice of the import's work (one template rendering or one zod read of a call), never a whole call
// or the whole file's parse.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { expect, it } from 'vitest';
import { openStore } from '../store/open';
import { importSessionFile, importTokenizer } from '.';
import { longClaudeSession } from './test-sessions';

/**
 * The longest wait allowed, for a session of 100 turns and a sub-agent's 20,000 lines (70 MB): now
 * 86 ms alone on a calm 2-core machine, 102 ms beside another test file; the margin is for a loaded
 * machine. Before the import yielded inside a call and while parsing: 574 ms calm (the whole file's
 * parse in one piece), more under load. Without the sub-agent lines (bench `import.claude-code`):
 * 27–30 ms against 69 ms calm, 86–174 against 397–612 ms at load 13.
 */
const MAX_WAIT_MS = 300;

it('an import of a 100-turn session (70 MB with its sub-agent) never keeps the event loop (the proxy) waiting more than a slice', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'hrl-import-loop-'));
  const file = join(dir, 'session.jsonl');
  // 100 turns and 20,000 lines of a sub-agent's work (left out): a 70 MB file
  writeFileSync(file, longClaudeSession(100, 20_000));
  const store = await openStore('sqlite', join(dir, 'store'));
  const tokenizer = importTokenizer('Qwen/Qwen3-8B');
  await tokenizer.encode('loaded before the watch starts');
  const lag = monitorEventLoopDelay({ resolution: 5 });
  try {
    lag.enable();
    const r = await importSessionFile(store, file, {
      source: 'claude-code',
      model: 'Qwen/Qwen3-8B',
      tokenizer,
    });
    lag.disable();
    expect(r).toMatchObject({ status: 'imported', calls: 101 });
    expect(lag.max / 1e6).toBeLessThan(MAX_WAIT_MS);
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}, 120_000);
