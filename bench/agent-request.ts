// The request a coding agent sends mid-task, as the proxy and store benches measure it.

/** 8 tools that read or edit the workspace; each takes `properties`, `path` required. */
export function agentTools(properties: Record<string, object>): object[] {
  return Array.from({ length: 8 }, (_, i) => ({
    type: 'function',
    function: {
      name: `tool_${i}`,
      description: 'Reads or edits the workspace. '.repeat(4),
      parameters: { type: 'object', properties, required: ['path'] },
    },
  }));
}

/** A system prompt, the task, then `turns` tool calls, the i-th answered with `result(i)`. */
export function agentMessages(turns: number, result: (i: number) => string): object[] {
  const messages: object[] = [{ role: 'system', content: 'You are a careful coding agent. '.repeat(40) }];
  messages.push({ role: 'user', content: 'Fix the failing test in src/parser.ts.' });
  for (let i = 0; i < turns; i++) {
    messages.push({
      role: 'assistant',
      content: null,
      tool_calls: [
        {
          id: `call_${i}`,
          type: 'function',
          function: { name: 'tool_1', arguments: `{"path":"src/f${i}.ts"}` },
        },
      ],
    });
    messages.push({ role: 'tool', tool_call_id: `call_${i}`, content: result(i) });
  }
  return messages;
}
