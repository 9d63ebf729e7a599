import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import type { DaemonEventType } from '../protocol/events';
import { openStore } from './open';
import { newCall } from './test-calls';

it('a listener of some event types gets only those, and llm_call events are built for those who take them', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'harness-rl-sub-'));
  const store = await openStore('sqlite', dir);
  const typed: DaemonEventType[] = [];
  const all: DaemonEventType[] = [];
  const offTyped = store.subscribe((e) => typed.push(e.type), ['rollout']);
  const r = await store.createRollout({ kind: 'standalone' });
  await store.recordLlmCall(newCall({ rollout_id: r.id }));
  expect(typed).toContain('rollout');
  expect(typed).not.toContain('llm_call');
  const offAll = store.subscribe((e) => all.push(e.type));
  await store.recordLlmCall(newCall({ rollout_id: r.id }));
  expect(all).toEqual(['llm_call']);
  offAll();
  offAll(); // twice: still one unsubscription
  offTyped();
  await store.recordLlmCall(newCall({ rollout_id: r.id }));
  expect(all).toEqual(['llm_call']);
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});
