// The token bridge with the daemon's own tokenizer (config model_files): a bridged call asks the
// backend nothing but its generation once the daemon's rendering has been checked against /tokenize,
// and a rendering that disagrees sends the calls back to the backend's tokenizer, said in the record.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BridgeRecord } from '../../daemon/protocol/entities';
import { type FakeVllm, renderChat, startFakeVllm } from '../fixtures/fake-vllm';
import { TOY_CHAT_TEMPLATE, writeToyModelFolder } from '../fixtures/toy-model';
import { startTestProxy, type TestProxy } from './proxy-setup';

let fake: FakeVllm;
const proxies: TestProxy[] = [];
const dir = mkdtempSync(join(tmpdir(), 'harness-rl-toy-model-'));

beforeAll(async () => {
  fake = await startFakeVllm({ model: 'toy' });
});
afterAll(async () => {
  for (const p of proxies) await p.close();
  await fake.close();
});

async function proxyWith(folder: string, tokenizerCheckEvery: number): Promise<TestProxy> {
  const p = await startTestProxy({ backends: [fake.url], modelFiles: { toy: folder }, tokenizerCheckEvery });
  proxies.push(p);
  return p;
}

/** `turns` calls of one conversation, each resending the history with the answer and a new question. */
async function converse(client: OpenAI, turns: number): Promise<OpenAI.Chat.ChatCompletionMessageParam[][]> {
  const sent: OpenAI.Chat.ChatCompletionMessageParam[][] = [];
  const messages: OpenAI.Chat.ChatCompletionMessageParam[] = [
    { role: 'system', content: 'You are terse.' },
    { role: 'user', content: 'question 0' },
  ];
  for (let t = 0; t < turns; t++) {
    sent.push([...messages]);
    const r = await client.chat.completions.create({ model: 'toy', messages });
    messages.push(
      { role: 'assistant', content: r.choices[0].message.content },
      { role: 'user', content: `q ${t + 1}` },
    );
  }
  return sent;
}

describe("the bridge on the daemon's own tokenizer", () => {
  it('asks the backend nothing but generations once checked: /tokenize on the first bridged call and every n-th', async () => {
    const proxy = await proxyWith(writeToyModelFolder(join(dir, 'toy')), 3);
    const { id, client } = await proxy.rollout({ tito: true });
    const before = fake.tokenizerRequests();
    const sent = await converse(client, 6);
    // bridged calls 1..5: the 1st (whole rendering) and the 4th (every 3rd after) are checked, once each
    expect(fake.tokenizerRequests() - before).toBe(2);
    const calls = await proxy.calls(id);
    expect(calls.map((c) => c.token_source)).toEqual(['backend', ...Array(5).fill('bridge')]);
    expect(calls.slice(1).map((c) => (c.bridge as BridgeRecord | null)?.tokenizer)).toEqual(
      Array(5).fill('daemon'),
    );
    expect(calls.slice(1).map((c) => (c.bridge as BridgeRecord | null)?.tokenizer_check ?? null)).toEqual([
      'checked whole against /tokenize',
      null,
      null,
      'checked against /tokenize',
      null,
    ]);
    // the prompt the daemon built is the backend's own rendering of the conversation (the toy samples
    // exactly what its template renders for the answer)
    calls.forEach((c, i) => {
      expect(c.prompt_ids).toEqual(renderChat(sent[i] as Parameters<typeof renderChat>[0]));
    });
  });

  it('a rendering that disagrees with /tokenize goes back to the backend’s tokenizer and says so in the record', async () => {
    const off = join(dir, 'off');
    writeToyModelFolder(off);
    writeFileSync(
      join(off, 'chat_template.jinja'),
      TOY_CHAT_TEMPLATE.replace('{{ m.role }}\n', '{{ m.role }}:\n'),
    );
    const proxy = await proxyWith(off, 64);
    const { id, client } = await proxy.rollout({ tito: true });
    await converse(client, 3);
    const calls = await proxy.calls(id);
    expect(calls.map((c) => c.token_source)).toEqual(['backend', 'bridge', 'bridge']);
    for (const c of calls.slice(1)) {
      expect(c.bridge).toMatchObject({ tokenizer: 'backend' });
      expect((c.bridge as BridgeRecord | null)?.tokenizer_check).toMatch(
        /^the daemon's rendering disagreed with the backend's \/tokenize at token \d+/,
      );
    }
    expect(calls[2].prompt_ids?.slice(0, calls[1].prompt_ids?.length)).toEqual(calls[1].prompt_ids);
  });

  it('a model folder that cannot be read leaves the bridge on the backend’s tokenizer, said in the record', async () => {
    const proxy = await proxyWith(join(dir, 'missing'), 64);
    const { id, client } = await proxy.rollout({ tito: true });
    await converse(client, 2);
    const [, second] = await proxy.calls(id);
    expect(second.token_source).toBe('bridge');
    expect(second.bridge).toMatchObject({ tokenizer: 'backend' });
    expect((second.bridge as BridgeRecord | null)?.tokenizer_check).toMatch(
      /tokenizer files could not be used: .*tokenizer.json: not found/,
    );
  });
});
