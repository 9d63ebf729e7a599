// A person's recording (VS Code's, through the unscoped /v1) keeps recording while an evolution's
// proposer runs and after it: the proposer's own recording is scoped (its key only), so starting it
// stops nothing, and the daemon token still means the person's recording while the proposer records.
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { RecordingDetail } from '../../daemon/protocol/api';
import { type FakeVllm, startFakeVllm } from '../fixtures/fake-vllm';
import { evolutionEnd, evolveBed, exampleRun, tinyEvolve } from '../helpers/evolve';
import { EDITS, EXAMPLE } from '../helpers/math-harness';
import { waitFor } from '../helpers/wait';

// The proposer: one call, then it waits until the test has called through the person's recording,
// then a second call, then the retry edit.
const PROPOSER = `
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
const state = process.argv[2];
const ask = async (content) => {
  const res = await fetch(process.env.OPENAI_BASE_URL + '/chat/completions', {
    method: 'POST',
    headers: { authorization: 'Bearer ' + process.env.OPENAI_API_KEY, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'toy', messages: [{ role: 'user', content }], max_tokens: 8 }),
  });
  if (res.status !== 200) throw new Error('proposer call: ' + res.status + ' ' + (await res.text()));
};
await ask('proposer first');
writeFileSync(join(state, 'started'), '');
for (let i = 0; i < 600 && !existsSync(join(state, 'go')); i++) await new Promise((r) => setTimeout(r, 100));
await ask('proposer second');
let text = readFileSync('agent.mjs', 'utf8');
for (const [from, to] of JSON.parse(process.argv[3])) text = text.replace(from, to);
writeFileSync('agent.mjs', text);
`;

let fake: FakeVllm;
const bed = evolveBed(
  'evolve-rec',
  { 'propose.mjs': PROPOSER },
  {
    before: async () => {
      fake = await startFakeVllm({ model: 'toy' });
    },
    after: () => fake?.close(),
  },
);

async function chat(key: string, content: string): Promise<number> {
  const res = await fetch(`${bed.daemon.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'toy', messages: [{ role: 'user', content }], max_tokens: 8 }),
  });
  await res.text();
  return res.status;
}

describe("an evolution beside a person's recording", () => {
  it('a recording started before an evolution keeps recording calls while and after the proposer runs', async () => {
    const { daemon, state } = bed;
    const started = await daemon.api('POST', '/api/recordings', {
      name: 'my session',
      upstream: { kind: 'vllm', base_url: fake.url },
    });
    expect(started.status, JSON.stringify(started.body)).toBe(201);
    const mine = started.body as { id: string; key: string };
    expect(await chat(mine.key, 'mine before')).toBe(200);

    const config = await exampleRun(
      10,
      0.3,
      tinyEvolve([process.execPath, join(state, 'propose.mjs'), state, JSON.stringify(EDITS.retry)], {
        proposer_upstream: { kind: 'vllm', base_url: fake.url },
        pruner: { margin: 0 },
      }),
    );
    const evolution = await daemon.api('POST', '/api/evolutions', { config, base_dir: EXAMPLE });
    expect(evolution.status, JSON.stringify(evolution.body)).toBe(201);
    await waitFor('the proposer to call', async () => existsSync(join(state, 'started')) || null, 300_000);
    // While the proposer records: the person's key, and the daemon token (the active recording: theirs).
    expect(await chat(mine.key, 'mine while')).toBe(200);
    expect(await chat(daemon.token, 'token while')).toBe(200);
    writeFileSync(join(state, 'go'), '');
    const evo = await evolutionEnd(daemon, evolution.body.id);
    expect(evo.status, evo.error ?? '').toBe('finished');
    expect(await chat(mine.key, 'mine after')).toBe(200);

    const recording = (await daemon.api<RecordingDetail>('GET', `/api/recordings/${mine.id}`)).body;
    expect(recording.status).toBe('active');
    const asked = recording.calls.map((c) => JSON.stringify(c.request));
    expect(asked.map((a) => /(mine|token) (before|while|after)/.exec(a)?.[0])).toEqual([
      'mine before',
      'mine while',
      'token while',
      'mine after',
    ]);
    const child = evo.candidates.find((c) => c.parent !== null)!;
    expect(child.proposer!.exit_code, child.proposer!.log).toBe(0);
    const theirs = (
      await daemon.api<RecordingDetail>('GET', `/api/recordings/${child.proposer!.recording_id}`)
    ).body;
    expect(theirs.scoped).toBe(true);
    expect(theirs.status).toBe('stopped');
    expect(theirs.calls.map((c) => /proposer \w+/.exec(JSON.stringify(c.request))?.[0])).toEqual([
      'proposer first',
      'proposer second',
    ]);
  }, 400_000);
});
