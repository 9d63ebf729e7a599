// Importing a long past session beside live rollouts: the daemon reads and tokenizes it in its import
// thread, so the proxy answers a harness's calls during the import about as fast as before it.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { longClaudeSession } from '../../daemon/import/test-sessions';
import { startFakeVllm } from '../fixtures/fake-vllm';
import { startTestDaemon } from '../helpers/daemon';

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1];

/**
 * How much slower a proxy call may be, at the median, while the import runs than alone (the median of
 * the calls just before and just after it, on the same machine at the same load). With the import in
 * its thread: 0.8–1.1x at load 11–13 on 2 cores. With the import on the event loop (3b8db66, yielding
 * every 8 ms of its work), a call waited behind a slice at each of its turns of the loop: 4.1–8.5x.
 */
const SLOWER = 3;

it('a proxy call made while a 100-turn session (70 MB with its sub-agent) is imported is answered about as fast as before the import', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'hrl-import-loop-'));
  // 100 turns and 20,000 lines of a sub-agent's work (read, left out): a 70 MB file
  writeFileSync(join(dir, 'session.jsonl'), longClaudeSession(100, 20_000));
  const fake = await startFakeVllm({ model: 'toy' });
  const daemon = await startTestDaemon({ backends: [fake.url] });
  try {
    const rollout = (await daemon.api('POST', '/api/rollouts', {})).body;
    const call = async () => {
      const t0 = performance.now();
      const res = await fetch(`${rollout.openai_base_url}/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${rollout.key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'toy', messages: [{ role: 'user', content: 'hi' }], max_tokens: 4 }),
      });
      expect(res.status).toBe(200);
      await res.json();
      return performance.now() - t0;
    };
    for (let i = 0; i < 20; i++) await call(); // warm: the first calls compile the proxy's code
    const before: number[] = [];
    for (let i = 0; i < 30; i++) before.push(await call());
    let done = false;
    const t0 = performance.now();
    const imported = daemon
      .api('POST', '/api/imports', { source: 'claude-code', root: dir, path: 'session.jsonl' })
      .finally(() => {
        done = true;
      });
    const during: number[] = [];
    while (!done) during.push(await call());
    const importMs = performance.now() - t0;
    expect((await imported).body).toMatchObject({ status: 'imported', calls: 101 });
    const after: number[] = [];
    for (let i = 0; i < 30; i++) after.push(await call());
    const figures = {
      before: median(before),
      after: median(after),
      alone: median([...before, ...after]),
      during: median(during),
      calls: during.length,
      importMs,
    };
    console.log(JSON.stringify(figures));
    expect(during.length).toBeGreaterThan(10);
    expect(figures.during).toBeLessThan(SLOWER * figures.alone);
  } finally {
    await daemon.close();
    await fake.close();
    rmSync(dir, { recursive: true, force: true });
  }
}, 180_000);
