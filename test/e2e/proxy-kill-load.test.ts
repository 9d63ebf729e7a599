// The proxy's group commit under load: a daemon killed with SIGKILL while 32 harnesses call it (their
// records committed several per transaction) keeps every call whose reply reached its harness, with
// the backend's token ids and logprobs, streamed or not.
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import OpenAI from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import { DAEMON_NODE_FLAGS } from '../../daemon/cli/node-flags';
import { openStore } from '../../daemon/store/open';
import {
  freshStoreSpace,
  PG_SHOWN,
  postgresProblem,
  type TestStoreSpace,
} from '../../daemon/store/pg-testing';
import { decode, type FakeVllm, logprobOf, startFakeVllm } from '../fixtures/fake-vllm';
import { startDaemonProcess } from '../helpers/daemon';

const HARNESSES = 32;
const problem = await postgresProblem();
if (problem && !process.env.CI)
  console.warn(`\n  SKIPPING the PostgreSQL proxy kill test: ${PG_SHOWN} is unreachable (${problem}).\n`);

const targets: { name: string; make(): TestStoreSpace }[] = [
  { name: 'sqlite', make: () => freshStoreSpace('sqlite', 'hrl-proxy-kill-') },
];
if (!problem || process.env.CI)
  targets.push({ name: 'postgres', make: () => freshStoreSpace('postgres', 'hrl-proxy-kill-', 'pkill_') });

const children: ChildProcess[] = [];
const fakes: FakeVllm[] = [];
afterEach(async () => {
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
  for (const f of fakes.splice(0)) await f.close();
});

describe.each(targets)('$name store', (target) => {
  it('every call that got its reply is stored, token for token, after kill -9 under load', async () => {
    const fake = await startFakeVllm({ model: 'toy' });
    fakes.push(fake);
    const db = target.make();
    try {
      const token = `test_${randomBytes(12).toString('hex')}`;
      const daemon = await startDaemonProcess(
        ['--port', '0', '--data', db.dataDir, '--store', db.spec, '--token', token, '--backend', fake.url],
        { nodeFlags: DAEMON_NODE_FLAGS },
      );
      children.push(daemon.child);
      const created = await fetch(`${daemon.url}/api/rollouts`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: '{}',
      });
      expect(created.status).toBe(201);
      const rollout = (await created.json()) as { id: string; key: string; openai_base_url: string };
      const client = new OpenAI({ baseURL: rollout.openai_base_url, apiKey: rollout.key, maxRetries: 0 });

      /** What each harness got back, by call number: the reply's text, whole. */
      const replies = new Map<number, string>();
      const killAt = 150 + Math.floor(Math.random() * 150);
      const exited = new Promise<NodeJS.Signals | null>((resolve) =>
        daemon.child.on('exit', (_code, signal) => resolve(signal)),
      );
      let next = 0;
      const harness = async () => {
        while (daemon.child.signalCode === null) {
          const n = next++;
          const content = `call ${n}`;
          try {
            let text = '';
            if (n % 2 === 0) {
              const r = await client.chat.completions.create({
                model: 'toy',
                messages: [{ role: 'user', content }],
                max_tokens: 12,
              });
              text = r.choices[0].message.content ?? '';
            } else {
              const stream = await client.chat.completions.create({
                model: 'toy',
                messages: [{ role: 'user', content }],
                max_tokens: 12,
                stream: true,
              });
              for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
            }
            replies.set(n, text);
          } catch {
            return; // the daemon is gone (or going): this call got no reply
          }
          if (replies.size >= killAt && daemon.child.signalCode === null) daemon.child.kill('SIGKILL');
        }
      };
      await Promise.all(Array.from({ length: HARNESSES }, harness));
      expect(await exited).toBe('SIGKILL');
      expect(replies.size).toBeGreaterThanOrEqual(killAt);

      const store = await openStore(db.spec, db.dataDir);
      try {
        const stored = new Map<string, (typeof calls)[number]>();
        const calls = await store.listLlmCalls(rollout.id);
        for (const c of calls)
          stored.set((c.request as { messages: { content: string }[] }).messages[0].content, c);
        for (const [n, text] of replies) {
          const call = stored.get(`call ${n}`);
          expect(call, `call ${n} got its reply but is not in the store`).toBeDefined();
          expect(call!.status).toBe('ok');
          expect(call!.stream).toBe(n % 2 === 1);
          expect(call!.token_source).toBe('backend');
          const ids = call!.response_ids!;
          expect(decode(ids)).toBe(text);
          expect(call!.response_logprobs).toEqual(ids.map(logprobOf));
          expect(call!.prompt_ids!.length).toBeGreaterThan(0);
        }
        // Nothing half-written: sequence numbers stay dense.
        expect(calls.map((c) => c.seq)).toEqual(calls.map((_, i) => i));
      } finally {
        await store.close();
      }
    } finally {
      await db.drop();
    }
  }, 90_000);
});
