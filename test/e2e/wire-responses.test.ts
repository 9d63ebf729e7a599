// The official openai SDK talks to a real fastify server that serves /v1/responses through the
// Responses translator over a scripted vLLM-style chat backend.
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { responsesTranslator } from '../../daemon/proxy/translate/responses';
import {
  type ScriptedServer,
  type ScriptedTurn,
  serveTranslator,
} from '../../daemon/proxy/translate/test-kit';

let s: ScriptedServer;
let client: OpenAI;

beforeAll(async () => {
  s = await serveTranslator(responsesTranslator, '/v1/responses');
  client = new OpenAI({ apiKey: 'test-key', baseURL: `${s.url}/v1`, maxRetries: 0 });
});
afterAll(() => s.close());

const tools: OpenAI.Responses.FunctionTool[] = [
  {
    type: 'function',
    name: 'read_file',
    description: 'Read a file',
    parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
    strict: false,
  },
];

const callTurn: ScriptedTurn = {
  reasoning: 'I need to read the file first.',
  content: 'Reading it.',
  toolCalls: [{ id: 'call_r1', name: 'read_file', arguments: '{"path": "README.md"}' }],
  promptTokens: 30,
  completionTokens: 15,
};
const answerTurn: ScriptedTurn = { content: 'The README says hello.', promptTokens: 55, completionTokens: 6 };

describe('OpenAI SDK against the Responses translator', () => {
  it('responses.create returns reasoning, message and function_call items, output_text and usage', async () => {
    s.script.push(callTurn);
    const r = await client.responses.create({ model: 'qwen3', input: 'Summarise README.md', tools });
    expect(r.status).toBe('completed');
    expect(r.output.map((o) => o.type)).toEqual(['reasoning', 'message', 'function_call']);
    expect(r.output_text).toBe('Reading it.');
    const call = r.output[2] as OpenAI.Responses.ResponseFunctionToolCall;
    expect(call).toMatchObject({ call_id: 'call_r1', name: 'read_file', arguments: '{"path": "README.md"}' });
    expect(r.usage).toMatchObject({ input_tokens: 30, output_tokens: 15, total_tokens: 45 });
  });

  it('responses.stream gives the same final response as create, and a function-call round trip reaches the backend', async () => {
    s.script.push(callTurn);
    const input: OpenAI.Responses.ResponseInput = [{ role: 'user', content: 'Summarise README.md' }];
    const stream = client.responses.stream({ model: 'qwen3', input, tools });
    let argDeltas = '';
    stream.on('response.function_call_arguments.delta', (e) => {
      argDeltas += e.delta;
    });
    const streamed = await stream.finalResponse();
    s.script.push(callTurn);
    const plain = await client.responses.create({ model: 'qwen3', input, tools });
    // the stream helper adds its own `parsed` / `parsed_arguments` fields; the wire items must match
    const wire = (o: unknown) =>
      JSON.parse(JSON.stringify(o, (k, v) => (k === 'parsed' || k === 'parsed_arguments' ? undefined : v)));
    expect(wire(streamed.output)).toEqual(wire(plain.output));
    expect(streamed.output_text).toBe(plain.output_text);
    expect(streamed.usage).toEqual(plain.usage);
    expect(argDeltas).toBe('{"path": "README.md"}');

    // the harness sends the whole conversation back with the tool output (store: false style)
    input.push(...(streamed.output as OpenAI.Responses.ResponseInputItem[]));
    input.push({ type: 'function_call_output', call_id: 'call_r1', output: 'hello' });
    s.script.push(answerTurn);
    const second = await client.responses.stream({ model: 'qwen3', input, tools }).finalResponse();
    expect(second.output_text).toBe('The README says hello.');
    expect(s.chatRequests.at(-1)?.messages).toEqual([
      { role: 'user', content: 'Summarise README.md' },
      {
        role: 'assistant',
        content: 'Reading it.',
        reasoning_content: 'I need to read the file first.',
        tool_calls: [
          {
            id: 'call_r1',
            type: 'function',
            function: { name: 'read_file', arguments: '{"path": "README.md"}' },
          },
        ],
      },
      { role: 'tool', tool_call_id: 'call_r1', content: 'hello' },
    ]);
  });

  it('create({stream: true}) yields typed events with increasing sequence numbers and no [DONE]', async () => {
    s.script.push(answerTurn);
    const events = await client.responses.create({ model: 'qwen3', input: 'hi', stream: true });
    const types: string[] = [];
    const seqs: number[] = [];
    let text = '';
    for await (const e of events) {
      types.push(e.type);
      seqs.push(e.sequence_number);
      if (e.type === 'response.output_text.delta') text += e.delta;
    }
    expect(text).toBe('The README says hello.');
    expect(types[0]).toBe('response.created');
    expect(types.at(-1)).toBe('response.completed');
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    expect(new Set(seqs).size).toBe(seqs.length);
  });

  it('a backend failure mid-stream reaches the SDK as an error', async () => {
    s.script.push({ ...answerTurn, failMidStream: 'backend went away' });
    const err = await client.responses
      .stream({ model: 'qwen3', input: 'hi' })
      .finalResponse()
      .catch((e) => e);
    expect(err).toBeInstanceOf(Error);
    expect(String(err.message)).toMatch(/backend went away/);
  });

  it('a function tool without a name is refused with a 400 naming the field', async () => {
    const err = await client.responses
      .create({ model: 'qwen3', input: 'x', tools: [{ type: 'function', parameters: {} } as never] })
      .catch((e) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect(err.status).toBe(400);
    expect(err.error).toMatchObject({ type: 'invalid_request_error', param: 'tools.0.name' });
  });

  it('a hosted tool does not reach the chat backend (the proxy records it as left out)', async () => {
    s.script.push(answerTurn);
    const r = await client.responses.create({
      model: 'qwen3',
      input: 'x',
      tools: [{ type: 'web_search' }, ...tools],
    });
    expect(r.status).toBe('completed');
    expect(
      s.chatRequests.at(-1)?.tools?.map((t) => (t as { function: { name: string } }).function.name),
    ).toEqual(['read_file']);
    expect(r.tools[0]).toEqual({ type: 'web_search' });
  });
});
