// Codex's tools through the REAL proxy in front of the fake vLLM, with the official openai SDK: a
// namespace of function tools reaches the backend as qualified function tools and its calls come back
// with their namespace; hosted tools are left out of the backend request and the call says which.
import OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { RunConfig } from '../../daemon/protocol/config';
import { proxyOnFakeVllm } from './proxy-setup';

const env = proxyOnFakeVllm();

/** The tools Codex 0.171 sends by default (abridged): functions, a namespace, a hosted tool. */
const codexTools = [
  {
    type: 'namespace',
    name: 'multi_agent_v1',
    description: 'Spawn and manage sub-agents.',
    tools: [
      {
        type: 'function',
        name: 'spawn_agent',
        description: 'Start a sub-agent.',
        parameters: { type: 'object', properties: { query: { type: 'string' } } },
        strict: false,
      },
      { type: 'function', name: 'wait_agent', parameters: { type: 'object', properties: {} }, strict: false },
    ],
  },
  {
    type: 'function',
    name: 'shell',
    description: 'Run a command.',
    parameters: { type: 'object', properties: { command: { type: 'array', items: { type: 'string' } } } },
    strict: false,
  },
  { type: 'web_search', external_web_access: false },
] as unknown as OpenAI.Responses.Tool[];

describe("Codex's tools through the proxy", () => {
  it('a namespaced function is called by the model and reaches Codex with its namespace, streamed and not', async () => {
    // tito off: the next turn's chat request itself reaches the backend (bridged, it would be token ids)
    const { id, client } = await env.proxy.rollout({ tito: false });
    // the fake backend calls the first tool it is given when the user mentions a tool
    const input = 'use the tool please';
    const plain = await client.responses.create({ model: 'toy', input, tools: codexTools });
    const streamed = await client.responses
      .stream({ model: 'toy', input, tools: codexTools })
      .finalResponse();
    for (const r of [plain, streamed]) {
      const call = r.output.find((o) => o.type === 'function_call');
      expect(call).toMatchObject({ name: 'spawn_agent', namespace: 'multi_agent_v1', status: 'completed' });
    }
    const sent = env.fake.produced.at(-1)?.request;
    expect(sent?.tools.map((t: any) => t.function.name)).toEqual([
      'multi_agent_v1__spawn_agent',
      'multi_agent_v1__wait_agent',
      'shell',
    ]);
    const calls = await env.proxy.calls(id);
    expect(calls.map((c) => [c.status, c.stream])).toEqual([
      ['ok', false],
      ['ok', true],
    ]);
    for (const c of calls)
      expect(c.tags).toEqual([
        expect.stringMatching(/^tool-left-out:web_search \(hosted tool: .*cannot run it\)$/),
      ]);

    // the next turn sends the call back with its namespace: the backend sees the qualified name
    const next: OpenAI.Responses.ResponseInput = [
      { role: 'user', content: input },
      ...(streamed.output as OpenAI.Responses.ResponseInputItem[]),
      { type: 'function_call_output', call_id: (streamed.output[0] as any).call_id, output: 'spawned' },
    ];
    await client.responses.create({ model: 'toy', input: next, tools: codexTools });
    const messages = env.fake.produced.at(-1)?.request.messages;
    expect(messages[1].tool_calls[0].function.name).toBe('multi_agent_v1__spawn_agent');
  });

  it('a run with inference.unsupported_tools: reject answers 400 naming the hosted tool', async () => {
    const store = env.proxy.store;
    const config = RunConfig.parse({
      name: 'strict-tools',
      model: { name: 'toy' },
      tasks: { file: 'x.jsonl' },
      inference: { unsupported_tools: 'reject' },
    });
    const run = await store.createRun({ name: 'strict-tools', config });
    const r = await store.createRollout({ kind: 'run', run_id: run.id });
    await store.startAttempt(r.id, 'test');
    const client = new OpenAI({ baseURL: `${env.proxy.url}/r/${r.id}/v1`, apiKey: r.key, maxRetries: 0 });
    const err = await client.responses
      .create({ model: 'toy', input: 'hi', tools: codexTools, stream: true })
      .catch((e) => e);
    expect(err.status).toBe(400);
    expect(err.message).toMatch(/tools\[2\] \(web_search\) is a hosted tool/);
    expect(err.param).toBe('tools[2]');
    const [call] = await env.proxy.calls(r.id);
    expect(call).toMatchObject({ status: 'error', http_status: 400, stream: true });
  });
});
