// The inference node serves the served model's tokenizer files over its connection: the daemon renders
// and tokenizes bridged calls on a remote deployment from them, with no local copy (no model_files),
// fetching them once, checked by SHA-256 and kept under <data>/model-files.
import { createHash } from 'node:crypto';
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type OpenAI from 'openai';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { NodeConnection } from '../../daemon/cluster/nodes/connection';
import { NodeTunnel } from '../../daemon/cluster/nodes/tunnel';
import { registerTransport, rootUrl } from '../../daemon/http';
import { type NodeAgent, startNodeAgent } from '../../daemon/node/agent';
import { InferenceRole } from '../../daemon/node/inference';
import type { BridgeRecord } from '../../daemon/protocol/entities';
import { type FakeVllm, renderChat, startFakeVllm } from '../fixtures/fake-vllm';
import { writeToyModelFolder } from '../fixtures/toy-model';
import { startTestProxy, type TestProxy } from './proxy-setup';

const dir = mkdtempSync(join(tmpdir(), 'harness-rl-node-files-'));
const toyFolder = writeToyModelFolder(join(dir, 'toy'));
const token = 'node-token-for-tests';
const quiet = () => {};
const cleanups: (() => Promise<void> | void)[] = [];

afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});
afterAll(() => {
  delete process.env.HF_HUB_CACHE;
});

/** fake vLLM serving `model`, a node agent in front of it, and a proxy whose backend is that node. */
async function deployment(model: string, modelFiles?: string) {
  const fake: FakeVllm = await startFakeVllm({ model });
  cleanups.push(() => fake.close());
  const role = new InferenceRole({ dataDir: join(dir, 'node'), vllmUrl: fake.url, modelFiles, log: quiet });
  const node: NodeAgent = await startNodeAgent({ host: '127.0.0.1', port: 0, token, role, log: quiet });
  cleanups.push(() => node.close());
  const connection = new NodeConnection({ url: rootUrl(node.url), token, role: 'inference', log: quiet });
  cleanups.push(() => connection.close());
  cleanups.push(registerTransport(rootUrl(node.url), new NodeTunnel(connection)));
  await connection.ready(10_000);
  const proxy: TestProxy = await startTestProxy({ backends: [rootUrl(node.url)], tokenizerCheckEvery: 3 });
  cleanups.push(() => proxy.close());
  return { fake, proxy };
}

/** `turns` calls of one conversation, each resending the history with the answer and a new question. */
async function converse(client: OpenAI, model: string, turns: number) {
  const sent: OpenAI.Chat.ChatCompletionMessageParam[][] = [];
  const messages: OpenAI.Chat.ChatCompletionMessageParam[] = [{ role: 'user', content: 'question 0' }];
  for (let t = 0; t < turns; t++) {
    sent.push([...messages]);
    const r = await client.chat.completions.create({ model, messages });
    messages.push(
      { role: 'assistant', content: r.choices[0].message.content },
      { role: 'user', content: `q ${t + 1}` },
    );
  }
  return sent;
}

const sha256 = (path: string) => createHash('sha256').update(readFileSync(path)).digest('hex');

describe('tokenizer files from the inference node', () => {
  it('a bridged call on a node tokenizes in the daemon from the files the node sends (--model-files), fetched once', async () => {
    const { fake, proxy } = await deployment('toy', toyFolder);
    const { id, client } = await proxy.rollout({ tito: true });
    const before = fake.tokenizerRequests();
    const sent = await converse(client, 'toy', 6);
    // bridged calls 1..5: the 1st (whole rendering) and the 4th are checked against /tokenize, once each
    expect(fake.tokenizerRequests() - before).toBe(2);
    const calls = await proxy.calls(id);
    expect(calls.map((c) => c.token_source)).toEqual(['backend', ...Array(5).fill('bridge')]);
    expect(calls.slice(1).map((c) => (c.bridge as BridgeRecord).tokenizer)).toEqual(Array(5).fill('daemon'));
    calls.forEach((c, i) => {
      expect(c.prompt_ids).toEqual(renderChat(sent[i] as Parameters<typeof renderChat>[0]));
    });
    // Kept by hash in the daemon's data folder, as the node listed them.
    const kept = readdirSync(join(proxy.dataDir, 'model-files')).sort();
    expect(kept).toEqual(
      [sha256(join(toyFolder, 'tokenizer.json')), sha256(join(toyFolder, 'tokenizer_config.json'))].sort(),
    );
  });

  it('the files are fetched and loaded when the daemon learns what the node serves, before any call', async () => {
    const { proxy } = await deployment('toy', toyFolder);
    const kept = join(proxy.dataDir, 'model-files');
    const end = Date.now() + 10_000;
    const has = () => existsSync(kept) && readdirSync(kept).filter((f) => !f.endsWith('.part')).length === 2;
    while (!has() && Date.now() < end) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(has()).toBe(true);
  });

  it('without --model-files the node finds the files of the hub id its vLLM serves in the Hugging Face cache', async () => {
    const hub = join(dir, 'hub');
    const snapshot = join(hub, 'models--org--toy', 'snapshots', 'abc123');
    mkdirSync(join(hub, 'models--org--toy', 'refs'), { recursive: true });
    writeFileSync(join(hub, 'models--org--toy', 'refs', 'main'), 'abc123\n');
    cpSync(toyFolder, snapshot, { recursive: true });
    process.env.HF_HUB_CACHE = hub;
    const { fake, proxy } = await deployment('org/toy');
    const { id, client } = await proxy.rollout({ tito: true });
    const before = fake.tokenizerRequests();
    await converse(client, 'org/toy', 3);
    expect(fake.tokenizerRequests() - before).toBe(1);
    const calls = await proxy.calls(id);
    expect(calls.slice(1).map((c) => (c.bridge as BridgeRecord).tokenizer)).toEqual(['daemon', 'daemon']);
  });

  it('a node with no files for the model leaves the bridge on the backend’s tokenizer, said in the record', async () => {
    process.env.HF_HUB_CACHE = join(dir, 'empty-hub');
    const { proxy } = await deployment('toy');
    const { id, client } = await proxy.rollout({ tito: true });
    await converse(client, 'toy', 3);
    const calls = await proxy.calls(id);
    expect(calls.map((c) => c.token_source)).toEqual(['backend', 'bridge', 'bridge']);
    for (const c of calls.slice(1))
      expect(c.bridge).toMatchObject({
        tokenizer: 'backend',
        tokenizer_check: 'the node has no tokenizer files for toy',
      });
  });
});
