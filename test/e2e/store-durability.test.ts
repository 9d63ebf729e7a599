// A writer process killed with SIGKILL mid-stream loses no llm call it acknowledged: every id it
// printed after its write resolved is in the store afterwards, byte for byte.
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { crashCall } from '../../daemon/store/crash-writer';
import { openStore } from '../../daemon/store/open';
import {
  freshStoreSpace,
  PG_SHOWN,
  postgresProblem,
  type TestStoreSpace,
} from '../../daemon/store/pg-testing';
import type { SqlStore } from '../../daemon/store/sql-store';

const ROOT = join(import.meta.dirname, '..', '..');
const WRITER = join(ROOT, 'daemon', 'store', 'crash-writer.ts');
const problem = await postgresProblem();
if (problem && !process.env.CI) {
  console.warn(`\n  SKIPPING the PostgreSQL durability test: ${PG_SHOWN} is unreachable (${problem}).\n`);
}

interface Target {
  name: string;
  make(): TestStoreSpace;
}
const targets: Target[] = [{ name: 'sqlite', make: () => freshStoreSpace('sqlite', 'hrl-durable-') }];
if (!problem || process.env.CI) {
  targets.push({ name: 'postgres', make: () => freshStoreSpace('postgres', 'hrl-durable-', 'durable_') });
}

const children: ChildProcess[] = [];
afterEach(() => {
  for (const child of children.splice(0)) {
    if (child.exitCode === null && child.signalCode === null && child.pid) {
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
  }
});

describe.each(targets)('$name store', (target) => {
  it('keeps every acknowledged llm call intact when the writer is killed with SIGKILL mid-stream', async () => {
    const db = target.make();
    try {
      const setup = await openStore(db.spec, db.dataDir);
      const rollout = await setup.createRollout({ kind: 'standalone' });
      await setup.close();

      // Its own process group, so kill -9 reaches node behind npx/tsx, not just the wrapper.
      const child = spawn('npx', ['tsx', WRITER, db.spec, db.dataDir, rollout.id], {
        cwd: ROOT,
        detached: true,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      children.push(child);
      let stderr = '';
      child.stderr!.on('data', (d) => {
        stderr += d;
      });
      const acked = new Map<string, number>();
      const target = 150 + Math.floor(Math.random() * 100);
      let buffered = '';
      const killed = new Promise<void>((resolve, reject) => {
        child.stdout!.on('data', (chunk: Buffer) => {
          buffered += chunk.toString();
          const lines = buffered.split('\n');
          buffered = lines.pop()!;
          for (const line of lines) {
            const [word, id, n] = line.split(' ');
            if (word === 'ack') acked.set(id, Number(n));
          }
          if (acked.size >= target && child.signalCode === null) process.kill(-child.pid!, 'SIGKILL');
        });
        child.on('exit', (code, signal) => {
          if (signal === 'SIGKILL') resolve();
          else reject(new Error(`writer exited on its own (code ${code}): ${stderr}`));
        });
      });
      await killed;
      // Lines already in the pipe when it died count too: they were acknowledged.
      await new Promise<void>((resolve) =>
        child.stdout!.readableEnded ? resolve() : child.stdout!.on('end', resolve),
      );
      for (const line of buffered.split('\n')) {
        const [word, id, n] = line.split(' ');
        if (word === 'ack' && n !== undefined && n !== '') acked.set(id, Number(n));
      }
      expect(acked.size).toBeGreaterThanOrEqual(target);

      const store = await openStore(db.spec, db.dataDir);
      try {
        if (store.kind === 'sqlite') {
          const check = await (store as SqlStore).driver.all<{ integrity_check: string }>(
            'PRAGMA integrity_check',
          );
          expect(check.map((r) => r.integrity_check)).toEqual(['ok']);
        }
        const stored = new Map((await store.listLlmCalls(rollout.id)).map((c) => [c.id, c]));
        for (const [id, n] of acked) {
          const call = stored.get(id);
          expect(call, `acknowledged call ${n} (${id}) is missing`).toBeDefined();
          const expected = crashCall(rollout.id, n);
          expect(call!.prompt_ids).toEqual(expected.prompt_ids);
          expect(call!.response_ids).toEqual(expected.response_ids);
          expect(call!.response_logprobs).toEqual(expected.response_logprobs);
          expect(call!.request).toEqual(expected.request);
          expect(call!.response).toEqual(expected.response);
        }
        // Sequence numbers stay dense: nothing half-written in between.
        const seqs = [...stored.values()].map((c) => c.seq).sort((a, b) => a - b);
        expect(seqs).toEqual(seqs.map((_, i) => i));
        // And the store still takes writes after the crash.
        expect((await store.recordLlmCall(crashCall(rollout.id, 99_999))).seq).toBe(seqs.length);
      } finally {
        await store.close();
      }
    } finally {
      await db.drop();
    }
  });
});
