// Importing a long past session shares the daemon's event loop: the proxy's requests wait at most a
// slice of the import's work (one template rendering or one zod read of a call), never a whole call.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { expect, it } from 'vitest';
import { openStore } from '../store/open';
import { importSessionFile, importTokenizer } from '.';
import { longClaudeSession } from './test-sessions';

/**
 * The longest wait allowed: the margin is for a loaded machine (2 cores at load 13: 86–174 ms, mostly
 * the time slice the scheduler gave others and GC). Before the import yielded inside a call and while
 * parsing, the same machine waited 397–612 ms (the bench `import.claude-code` has the figure).
 */
const MAX_WAIT_MS = 250;

it('an import of a 100-turn session never keeps the event loop (the proxy) waiting more than a slice', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'hrl-import-loop-'));
  const file = join(dir, 'session.jsonl');
  writeFileSync(file, longClaudeSession(100));
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
