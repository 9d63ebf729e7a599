import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import type { DaemonEvent } from '../protocol/events';
import { openStore } from './open';

it('a listener of some event types gets only those, and llm_call events are built for those who take them', async () => {
  const store = await openStore('sqlite', mkdtempSync(join(tmpdir(), 'harness-rl-sub-')));
  const typed: DaemonEvent['type'][] = [];
  const all: DaemonEvent['type'][] = [];
  const offTyped = store.subscribe((e) => typed.push(e.type), ['rollout']);
  const r = await store.createRollout({ kind: 'standalone' });
  const call = {
    rollout_id: r.id,
    wire_api: 'chat',
    request: {},
    token_source: 'text',
    status: 'ok',
  } as const;
  await store.recordLlmCall(call as never);
  expect(typed).toContain('rollout');
  expect(typed).not.toContain('llm_call');
  const offAll = store.subscribe((e) => all.push(e.type));
  await store.recordLlmCall(call as never);
  expect(all).toEqual(['llm_call']);
  offAll();
  offAll(); // twice: still one unsubscription
  offTyped();
  await store.recordLlmCall(call as never);
  expect(all).toEqual(['llm_call']);
  await store.close();
});
