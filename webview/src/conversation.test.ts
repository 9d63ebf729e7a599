import { describe, expect, it } from 'vitest';
import { newRequestEntries, requestEntries, responseEntries } from './conversation';

describe('conversation of every wire API', () => {
  it('chat: system, user, assistant tool calls, tool results and reasoning', () => {
    const call = {
      wire_api: 'chat' as const,
      request: {
        messages: [
          { role: 'system', content: 'be brief' },
          { role: 'user', content: [{ type: 'text', text: 'add 2 and 3' }] },
          {
            role: 'assistant',
            content: null,
            tool_calls: [
              { id: 't1', type: 'function', function: { name: 'calc', arguments: '{"a":2,"b":3}' } },
            ],
          },
          { role: 'tool', tool_call_id: 't1', content: '5' },
        ],
      },
      response: {
        choices: [
          { message: { role: 'assistant', content: 'It is 5.', reasoning_content: 'the tool said 5' } },
        ],
      },
    };
    expect(requestEntries(call).map((e) => `${e.role}/${e.kind}`)).toEqual([
      'system/text',
      'user/text',
      'assistant/tool_call',
      'tool/tool_result',
    ]);
    expect(requestEntries(call)[2]).toMatchObject({ name: 'calc', text: '{\n  "a": 2,\n  "b": 3\n}' });
    expect(responseEntries(call).map((e) => e.kind)).toEqual(['thinking', 'text']);
  });

  it('messages (Anthropic): system, thinking, tool_use and tool_result blocks', () => {
    const call = {
      wire_api: 'messages' as const,
      request: {
        system: 'sys',
        messages: [
          { role: 'user', content: 'hi' },
          { role: 'assistant', content: [{ type: 'tool_use', id: 'x', name: 'ls', input: { path: '.' } }] },
          {
            role: 'user',
            content: [{ type: 'tool_result', tool_use_id: 'x', content: [{ type: 'text', text: 'a.txt' }] }],
          },
        ],
      },
      response: {
        content: [
          { type: 'thinking', thinking: 'hmm' },
          { type: 'text', text: 'done' },
        ],
      },
    };
    expect(requestEntries(call).map((e) => e.kind)).toEqual(['text', 'text', 'tool_call', 'tool_result']);
    expect(requestEntries(call)[3]).toMatchObject({ role: 'tool', text: 'a.txt' });
    expect(responseEntries(call).map((e) => e.kind)).toEqual(['thinking', 'text']);
  });

  it('responses (OpenAI): instructions, input items, function calls and reasoning output', () => {
    const call = {
      wire_api: 'responses' as const,
      request: {
        instructions: 'sys',
        input: [
          { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'go' }] },
          { type: 'function_call_output', call_id: 'c1', output: 'ok' },
        ],
      },
      response: {
        output: [
          { type: 'reasoning', summary: [{ type: 'summary_text', text: 'plan' }] },
          { type: 'function_call', name: 'run', arguments: '{}', call_id: 'c2' },
          { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'bye' }] },
        ],
      },
    };
    expect(requestEntries(call).map((e) => `${e.role}/${e.kind}`)).toEqual([
      'system/text',
      'user/text',
      'tool/tool_result',
    ]);
    expect(responseEntries(call).map((e) => e.kind)).toEqual(['thinking', 'tool_call', 'text']);
  });

  it('each later call shows only the messages that are new', () => {
    const a = { wire_api: 'chat' as const, request: { messages: [{ role: 'user', content: 'q1' }] } };
    const b = {
      wire_api: 'chat' as const,
      request: {
        messages: [
          { role: 'user', content: 'q1' },
          { role: 'assistant', content: 'a1' },
          { role: 'user', content: 'q2' },
        ],
      },
    };
    const fresh = newRequestEntries([a, b]);
    expect(fresh[0].map((e) => e.text)).toEqual(['q1']);
    expect(fresh[1].map((e) => e.text)).toEqual(['q2']);
  });

  it('keeps an empty assistant turn (no text, no tool calls) as an entry, so the reply to it has a cause', () => {
    const empty = responseEntries({
      wire_api: 'chat',
      response: { choices: [{ message: { role: 'assistant', content: '' } }] },
    });
    expect(empty).toEqual([{ role: 'assistant', kind: 'text', text: '' }]);
    expect(responseEntries({ wire_api: 'messages', response: { content: [] } })).toHaveLength(1);
    const history = requestEntries({
      wire_api: 'chat',
      request: {
        messages: [
          { role: 'user', content: '2+2?' },
          { role: 'assistant', content: null },
          { role: 'user', content: 'no, the calculator says 4' },
        ],
      },
    });
    expect(history.map((e) => e.role)).toEqual(['user', 'assistant', 'user']);
  });
});
