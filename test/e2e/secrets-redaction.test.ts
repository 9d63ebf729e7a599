// Secrets stay out of the store, the logs and every answer: each kind of key a harness, a worker or a
// backend may carry is planted in every field the public interfaces (REST, the proxy, the worker
// protocol) reach, then the SQLite files (database and WAL) and PostgreSQL's tables are searched.
import { randomBytes } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { CreatedRecording, CreatedRollout, RolloutDetail } from '../../daemon/protocol/api';
import type { Run } from '../../daemon/protocol/entities';
import { dropPgSchema, pgSchemaText, pgSchemaUrl, postgresProblem } from '../../daemon/store/pg-testing';
import { type FakeVllm, startFakeVllm } from '../fixtures/fake-vllm';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon';

/** One of each kind, shaped as its issuer makes them (none is real). */
const KEYS = {
  openai: 'sk-proj-A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6',
  anthropic: 'sk-ant-api03-Zz9Yy8Xx7Ww6Vv5Uu4Tt3Ss2Rr1Qq0Pp',
  google: 'AIzaSyD4f9Kq2Lm8Np3Rs7Tv1Wx5Yz0Ab6Cd2EF',
  github: 'ghp_Q1w2E3r4T5y6U7i8O9p0A1s2D3f4G5h6J7k8',
  github_pat: 'github_pat_11ABCDEFG0_aB1cD2eF3gH4iJ5kL6mN7oP8qR9',
  huggingface: 'hf_Ab1Cd2Ef3Gh4Ij5Kl6Mn7Op8Qr9St0UvWx',
  aws: 'AKIAQ3EXAMPLE7KEY4ID',
  jwt: 'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJ1c2VyLTQyIn0.Sfl4KxwRJSMeKKF2QT4fwpMeJf36POk6yJV',
};
const URL_PASSWORD = 'Correct-Horse-Battery-77';
const QUERY_KEY = 'Staple-Query-Secret-88';
const NODE_TOKEN = 'node-token-of-my-own-choosing-99';
/** What must appear nowhere: each key, and the parts a URL carries. */
const NEEDLES = [...Object.values(KEYS), URL_PASSWORD, QUERY_KEY, NODE_TOKEN];
const PLANTED = `keys ${Object.values(KEYS).join(' ')} and https://alice:${URL_PASSWORD}@db.internal/x?api_key=${QUERY_KEY}`;

function leaks(text: string): string[] {
  return NEEDLES.filter((n) => text.includes(n));
}

const pgProblem = await postgresProblem();

async function sqliteBytes(dataDir: string): Promise<string> {
  let bytes = '';
  for (const f of await readdir(dataDir))
    if (f.startsWith('harness-rl.db')) bytes += (await readFile(join(dataDir, f))).toString('latin1');
  return bytes;
}

for (const kind of ['sqlite', 'postgres'] as const) {
  describe.skipIf(kind === 'postgres' && pgProblem !== null)(`secrets on ${kind}`, () => {
    let fake: FakeVllm;
    let daemon: TestDaemon;
    let dir: string;
    const schema = `t_secrets_${randomBytes(6).toString('hex')}`;
    const logs: string[] = [];
    const events: string[] = [];
    let socket: WebSocket;
    let backendUrl: string;

    beforeAll(async () => {
      // The toy model says back what it was told (as a model that read a .env file might).
      fake = await startFakeVllm({ model: 'toy', script: () => ({ text: `noted: ${PLANTED}` }) });
      backendUrl = fake.url.replace('http://', `http://alice:${URL_PASSWORD}@`);
      dir = await mkdtemp(join(tmpdir(), 'harness-rl-secrets-'));
      await writeFile(join(dir, 'tasks.jsonl'), `${JSON.stringify({ q: 1 })}\n${JSON.stringify({ q: 2 })}\n`);
      daemon = await startTestDaemon({
        backends: [backendUrl],
        log: (line) => logs.push(line),
        ...(kind === 'postgres' ? { store: pgSchemaUrl(schema) } : {}),
      });
      socket = new WebSocket(`${daemon.url.replace('http', 'ws')}/api/events`, {
        headers: { authorization: `Bearer ${daemon.token}` },
      });
      socket.on('message', (m) => events.push(String(m)));
      await new Promise((resolve, reject) => socket.once('open', resolve).once('error', reject));
    });
    afterAll(async () => {
      socket?.close();
      await daemon?.close();
      await fake?.close();
      if (dir) await rm(dir, { recursive: true, force: true });
      if (kind === 'postgres') await dropPgSchema(schema);
    });

    const post = (path: string, body: unknown, key?: string) =>
      fetch(`${daemon.url}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${key ?? daemon.token}` },
        body: JSON.stringify(body),
      });
    const chat = (baseUrl: string, key: string, body: Record<string, unknown>) =>
      post(`${baseUrl}/chat/completions`.replace(daemon.url, ''), body, key);
    const rollout = async () =>
      (await daemon.api<CreatedRollout>('POST', '/api/rollouts', { input: 'task' })).body;

    it('planted in calls, bridge diagnoses, rewards, failures, runs, attempts and recordings, none is stored or shown', async () => {
      // Calls: the request's messages, tools and user; the answer (streamed and not); the bridge's
      // diagnosis of an edited history; a backend error that echoes the request.
      const r = await rollout();
      const tools = [{ type: 'function', function: { name: 'read', description: PLANTED, parameters: {} } }];
      const first = await chat(r.openai_base_url, r.key, {
        model: 'toy',
        user: PLANTED,
        tools,
        messages: [{ role: 'user', content: `remember ${PLANTED}` }],
      });
      expect(first.status).toBe(200);
      // The harness gets the answer as the model gave it; only what is kept is redacted.
      const answer = (await first.json()) as { choices: { message: { content: string } }[] };
      expect(answer.choices[0].message.content).toContain(KEYS.openai);
      const edited = await chat(r.openai_base_url, r.key, {
        model: 'toy',
        user: PLANTED,
        tools,
        messages: [
          { role: 'user', content: `remember ${PLANTED} (edited)` },
          { role: 'assistant', content: answer.choices[0].message.content },
          { role: 'user', content: 'again' },
        ],
      });
      expect(edited.status).toBe(200);
      const streamed = await chat(r.openai_base_url, r.key, {
        model: 'toy',
        stream: true,
        messages: [{ role: 'user', content: PLANTED }],
      });
      expect(await streamed.text()).toContain('[DONE]');
      // A backend that refuses the request and echoes it: the harness and the store get it redacted.
      fake.set({ mode: 'fail', failStatus: 400, failMessage: `invalid key in ${PLANTED}` });
      const refused = await chat(r.openai_base_url, r.key, {
        model: 'toy',
        messages: [{ role: 'user', content: 'x' }],
      });
      expect(refused.status).toBe(400);
      const refusedText = await refused.text();
      expect(refusedText).toContain('invalid key in keys [redacted]');
      expect(leaks(refusedText)).toEqual([]);
      fake.set({ failMessage: undefined });
      // A failing backend: the 502 names it without its password.
      fake.set({ mode: 'fail', failStatus: 500 });
      const failed = await chat(r.openai_base_url, r.key, {
        model: 'toy',
        messages: [{ role: 'user', content: 'x' }],
      });
      fake.set({ mode: 'ok' });
      expect(failed.status).toBe(502);
      const failedText = await failed.text();
      expect(failedText).toContain('[redacted]@127.0.0.1');
      expect(leaks(failedText)).toEqual([]);
      const calls = (await daemon.api<RolloutDetail>('GET', `/api/rollouts/${r.id}`)).body.llm_calls;
      expect(calls).toHaveLength(5);
      expect(JSON.stringify(calls[1].bridge)).toMatch(/history edited/);
      expect(leaks(JSON.stringify(calls))).toEqual([]);

      // A reward's detail and a rollout's failure.
      expect(
        (await post(`/api/rollouts/${r.id}/reward`, { value: 1, detail: { log: PLANTED } }, r.key)).status,
      ).toBe(201);
      const doomed = await rollout();
      expect((await post(`/api/rollouts/${doomed.id}/fail`, { error: PLANTED }, doomed.key)).status).toBe(
        200,
      );

      // A run: its config (name, node token, harness and verifier argv) and, over the worker
      // protocol, a worker's name, an attempt's error and a verifier's reward detail.
      const config = {
        name: `secrets ${KEYS.google}`,
        inference: { endpoints: ['reference'], token: NODE_TOKEN },
        tasks: { file: 'tasks.jsonl' },
        harness: {
          workers: 'external',
          command: ['agent', '--api-key', KEYS.openai],
          verifier: ['check', `--url=https://bob:${URL_PASSWORD}@ci.internal/?token=${QUERY_KEY}`],
          reward: 'verifier',
          max_attempts: 2,
        },
        algorithm: { n: 1 },
        schedule: { steps: 1, groups_per_step: 1 },
      };
      const created = await daemon.api<Run>('POST', '/api/runs', { config, base_dir: dir });
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      expect(created.body.status).toBe('running');
      const claim = async () => {
        const res = await post(`/api/runs/${created.body.id}/claim`, {
          worker: `w ${KEYS.huggingface}`,
          wait_ms: 5000,
        });
        expect(res.status).toBe(200);
        return (await res.json()) as {
          attempt: { id: string };
          rollout: { id: string };
          verifier?: string[];
        };
      };
      const a1 = await claim();
      // The worker runs the verifier as configured: the claim carries the credentials the store lacks.
      expect(a1.verifier?.[1]).toContain(URL_PASSWORD);
      const finish = (
        a: { attempt: { id: string }; rollout: { id: string } },
        body: Record<string, unknown>,
      ) => post(`/api/attempts/${a.attempt.id}/finish`, { rollout_id: a.rollout.id, ...body });
      expect((await finish(a1, { status: 'failed', error: PLANTED })).status).toBe(200);
      const a2 = await claim();
      const done = await finish(a2, {
        status: 'succeeded',
        reward: 1,
        reward_source: 'verifier',
        reward_detail: { stdout: PLANTED },
      });
      expect(done.status).toBe(200);
      const shownRun = await daemon.api('GET', `/api/runs/${created.body.id}`);
      expect(leaks(JSON.stringify(shownRun.body))).toEqual([]);

      // A recording whose upstream URL carries a password: its calls still reach it.
      const rec = await daemon.api<CreatedRecording>('POST', '/api/recordings', {
        name: `rec ${KEYS.aws}`,
        upstream: { kind: 'vllm', base_url: backendUrl },
      });
      expect(rec.status).toBe(201);
      const recorded = await chat(rec.body.openai_base_url, rec.body.key, {
        model: 'toy',
        messages: [{ role: 'user', content: PLANTED }],
      });
      expect(recorded.status).toBe(200);
      expect((await daemon.api('POST', `/api/recordings/${rec.body.id}/stop`)).status).toBe(200);

      // What the API shows of backends, and everything logged and announced.
      const backends = await daemon.api('GET', '/api/backends');
      expect(JSON.stringify(backends.body)).toContain('[redacted]@127.0.0.1');
      expect(leaks(JSON.stringify(backends.body))).toEqual([]);
      expect(logs.length).toBeGreaterThan(0);
      expect(leaks(logs.join('\n'))).toEqual([]);
      expect(events.length).toBeGreaterThan(0);
      expect(leaks(events.join('\n'))).toEqual([]);

      // The store itself.
      const stored = kind === 'sqlite' ? await sqliteBytes(daemon.dataDir) : await pgSchemaText(schema);
      expect(stored).toContain(r.id);
      expect(stored).toContain('[redacted]');
      expect(leaks(stored)).toEqual([]);
    });

    it('the run resumes after a restart with the credentials this daemon held for it', async () => {
      const config = {
        name: 'resumes',
        inference: { endpoints: ['reference'], token: NODE_TOKEN },
        tasks: { file: 'tasks.jsonl' },
        harness: { workers: 'external', command: ['agent', '--api-key', KEYS.openai] },
        algorithm: { n: 1 },
        schedule: { steps: 1, groups_per_step: 1 },
      };
      const created = await daemon.api<Run>('POST', '/api/runs', { config, base_dir: dir });
      expect(created.body.status).toBe('running');
      const stored = await daemon.ctx.store.getRun(created.body.id);
      expect(leaks(JSON.stringify(stored))).toEqual([]);
      await daemon.ctx.runs?.stop(created.body.id);
      await daemon.ctx.store.updateRun(created.body.id, { status: 'running' });
      await daemon.ctx.runs?.start(created.body.id);
      expect((await daemon.ctx.store.getRun(created.body.id))?.status).toBe('running');
    });
  });
}
