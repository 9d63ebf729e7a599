// The store keeps no secret in any text it writes, on both stores: the entities the daemon writes
// for itself (nodes, model versions, prefix breaks, errors), and an agent's calls, whose bodies are
// scanned only past what they share with the last call (a key that straddles that point included).
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { JsonText } from './json-text';
import { openStore } from './open';
import { freshStoreSpace, pgSchemaText, postgresProblem, type TestStoreSpace } from './pg-testing';
import type { Store } from './store';
import { newCall } from './test-calls';

const KEY = 'sk-proj-A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6';
const TOKEN = 'ghp_Q1w2E3r4T5y6U7i8O9p0A1s2D3f4G5h6J7k8';
const PASSWORD = 'Correct-Horse-Battery-77';
const NEEDLES = [KEY, TOKEN, PASSWORD, KEY.slice(12), TOKEN.slice(8)];
const PLANTED = `${KEY} ${TOKEN} wss://node:${PASSWORD}@10.0.0.2:9000`;

const pgProblem = await postgresProblem();
const kinds = (['sqlite', 'postgres'] as const).filter((k) => k === 'sqlite' || !pgProblem);

/** What the store holds: the SQLite files' bytes, or every PostgreSQL row as JSON. */
async function storedText(space: TestStoreSpace): Promise<string> {
  if (space.spec === 'sqlite')
    return readdirSync(space.dataDir)
      .filter((f) => f.startsWith('harness-rl.db'))
      .map((f) => readFileSync(join(space.dataDir, f)).toString('latin1'))
      .join('');
  return pgSchemaText(new URL(space.spec).searchParams.get('schema') as string);
}

const leaks = (text: string) => NEEDLES.filter((n) => text.includes(n));

for (const kind of kinds) {
  describe(`redaction in the ${kind} store`, () => {
    let space: TestStoreSpace;
    let store: Store;
    const open = async () => {
      space = freshStoreSpace(kind, 'hrl-redact-', 't_redact_');
      store = await openStore(space.spec, space.dataDir);
      return store;
    };
    afterEach(async () => {
      await store?.close();
      await space?.drop();
    });

    it("keeps no secret of a node report, a model version, a prefix break, a run's or an attempt's error", async () => {
      await open();
      const seen: string[] = [];
      store.subscribe((e) => seen.push(JSON.stringify(e)));
      const node = await store.upsertNode({
        id: 'node-a',
        name: `gpu ${TOKEN}`,
        kind: 'inference',
        url: `wss://node:${PASSWORD}@10.0.0.2:9000`,
        status: 'unhealthy',
        model_version: null,
        detail: { error: PLANTED },
        last_seen_at: new Date().toISOString(),
      });
      expect(node.url).toBe('wss://[redacted]@10.0.0.2:9000');
      const run = await store.createRun({ name: 'r', config: { note: PLANTED } });
      await store.updateRun(run.id, { status: 'failed', error: PLANTED });
      await store.addModelVersion({ run_id: run.id, version: 1, path: `/ckpt/${KEY}`, metrics: null });
      const r = await store.createRollout({ kind: 'standalone', input: 'x', max_attempts: 2 });
      const attempt = await store.startAttempt(r.id, `worker ${TOKEN}`);
      await store.finishAttempt(attempt.id, 'failed', PLANTED);
      await store.setRolloutStats(r.id, { samples: 1, prefix_breaks: 1, mask_tokens: 0, truncations: 0 }, [
        {
          call_index: 1,
          position: 3,
          expected: [1],
          actual: [2],
          expected_text: PLANTED,
          actual_text: `x ${KEY}`,
          class: 'other',
          bridge_fallback: null,
        } as never,
      ]);
      expect(leaks(JSON.stringify(await store.getPrefixBreaks(r.id)))).toEqual([]);
      expect(leaks(seen.join('\n'))).toEqual([]);
      expect(leaks(await storedText(space))).toEqual([]);
    });

    /** An attempt's calls as an agent makes them: the history so far, then `content`. */
    async function agent(first: string) {
      const r = await store.createRollout({ kind: 'standalone', input: 'x' });
      const attempt = await store.startAttempt(r.id);
      const messages: { role: string; content: string }[] = [{ role: 'user', content: first }];
      const call = (content: string) => {
        const request = { model: 'm', messages: [...messages, { role: 'user', content }] };
        const text = JSON.stringify(request);
        return newCall({
          rollout_id: r.id,
          attempt_id: attempt.id,
          request: new JsonText(text, JSON.parse(text)),
          backend_request: new JsonText(text.replace('"m"', '"m2"'), { ...request, model: 'm2' }),
          response: { choices: [{ message: { role: 'assistant', content: 'ok' } }] },
        });
      };
      const turn = async (content: string, reply: string | null) => {
        await store.recordLlmCall(call(content));
        if (reply !== null) messages.push({ role: 'user', content }, { role: 'assistant', content: reply });
      };
      return { turn, calls: () => store.listLlmCalls(r.id) };
    }

    it("redacts a key in an agent's history from every later call", async () => {
      await open();
      const a = await agent(`the .env says ${KEY}`);
      for (let i = 0; i < 20; i++) await a.turn(`turn ${i} ${'x'.repeat(600)}`, `done ${i}`);
      const calls = await a.calls();
      expect(calls).toHaveLength(20);
      for (const c of calls) {
        expect(JSON.stringify(c.request)).toContain('the .env says [redacted]');
        expect(leaks(JSON.stringify(c))).toEqual([]);
      }
      expect(leaks(await storedText(space))).toEqual([]);
    });

    it('finds a key, and a private key block, split where a call parts from the last one', async () => {
      await open();
      const a = await agent('hello');
      for (let i = 0; i < 3; i++) await a.turn(`turn ${i} ${'x'.repeat(600)}`, `done ${i}`);
      // This call's history ends where a key begins; the next one (the same history) completes it.
      await a.turn(`half ${TOKEN.slice(0, 8)}`, null);
      await a.turn(`half ${TOKEN}`, 'done');
      const calls = await a.calls();
      expect(JSON.stringify(calls[4].request)).toContain('half [redacted]');
      expect(leaks(JSON.stringify(calls))).toEqual([]);
      // A private key block longer than the overlap, its end in the next call.
      const b = await agent('hello');
      for (let i = 0; i < 3; i++) await b.turn(`turn ${i} ${'x'.repeat(600)}`, `done ${i}`);
      const pem = `-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA${'Q7x'.repeat(400)}`;
      await b.turn(pem, null);
      await b.turn(`${pem}\n-----END RSA PRIVATE KEY-----`, 'done');
      expect(JSON.stringify((await b.calls())[4].request)).toContain('"content":"[redacted]"');
      const stored = await storedText(space);
      expect(leaks(stored)).toEqual([]);
      expect(stored).not.toContain('-----END RSA PRIVATE KEY-----');
    });

    it('finds a key or a private key block that the backend request adds to a clean request, where the two texts part or beyond', async () => {
      await open();
      const r = await store.createRollout({ kind: 'standalone', input: 'x' });
      const body = (content: string) => ({ model: 'm', messages: [{ role: 'user', content }] });
      const record = (request: object, backend: object) =>
        store.recordLlmCall(
          newCall({
            rollout_id: r.id,
            request: new JsonText(JSON.stringify(request), request),
            backend_request: new JsonText(JSON.stringify(backend), backend),
          }),
        );
      const long = 'y'.repeat(2000);
      // In place of the model (the texts part at once and meet again), appended before the last brace,
      // and a key whose first characters the backend adds where the texts meet again.
      await record(body(long), { ...body(long), model: KEY });
      await record(body(long), { ...body(long), extra: TOKEN });
      const hf = 'hf_Ab1Cd2Ef3Gh4Ij5Kl6Mn7Op8Qr9St0UvWx';
      await record(body(`x ${hf.slice(3)} ${long}`), body(`x ${hf} ${long}`));
      // A private key block opened by the backend and closed far into what both texts share.
      const tail = `MIIEowIBAAKCAQEA${'Q7x'.repeat(400)}\n-----END RSA PRIVATE KEY-----`;
      await record(body(tail), body(`-----BEGIN RSA PRIVATE KEY-----\n${tail}`));
      const calls = await store.listLlmCalls(r.id);
      expect(calls.map((c) => JSON.stringify(c.backend_request).includes('[redacted]'))).toEqual([
        true,
        true,
        true,
        true,
      ]);
      const stored = await storedText(space);
      expect(leaks(stored)).toEqual([]);
      expect(stored).not.toContain('-----BEGIN RSA PRIVATE KEY-----');
      expect(stored).not.toContain(hf);
    });
  });
}
