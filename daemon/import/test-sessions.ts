// A long synthetic Claude Code session for the import's tests and bench: N tool-calling turns, each
// tool result ~3 KB of code, so every call's prompt is the whole history so far (100 turns: ~160k
// Qwen3 tokens in the last prompt).
const CODE = Array.from(
  { length: 60 },
  (_, i) => `    total_${i} = sum(item.price * item.qty for item in cart_${i})  # line ${i}`,
).join('\n');

/**
 * `subAgentLines`: lines of a sub-agent's work (sidechain: read, then left out) after the first
 * message, each with a tool result like the others (a session file of several MB).
 */
export function longClaudeSession(turns: number, subAgentLines = 0): string {
  const lines: object[] = [];
  let parent: string | null = null;
  let t = Date.parse('2026-11-30T09:00:00.000Z');
  const at = () => {
    t += 1500;
    return new Date(t).toISOString();
  };
  const push = (type: string, message: object) => {
    const uuid = `u${lines.length}`;
    lines.push({ type, uuid, parentUuid: parent, sessionId: 'bench', cwd: '/w', timestamp: at(), message });
    parent = uuid;
  };
  push('user', { role: 'user', content: 'Make the cart totals add up, file by file.' });
  for (let i = 0; i < subAgentLines; i++)
    lines.push({
      type: 'user',
      uuid: `s${i}`,
      parentUuid: i ? `s${i - 1}` : null,
      isSidechain: true,
      sessionId: 'bench',
      timestamp: at(),
      message: {
        role: 'user',
        content: [{ type: 'tool_result', tool_use_id: `toolu_s${i}`, content: CODE }],
      },
    });
  for (let i = 0; i < turns; i++) {
    push('assistant', {
      id: `msg_${i}`,
      role: 'assistant',
      model: 'claude-sonnet-4-5',
      content: [
        { type: 'text', text: `Reading part ${i} of the cart.` },
        { type: 'tool_use', id: `toolu_${i}`, name: 'Read', input: { file_path: `/w/cart_${i}.py` } },
      ],
      stop_reason: 'tool_use',
    });
    push('user', {
      role: 'user',
      content: [{ type: 'tool_result', tool_use_id: `toolu_${i}`, content: CODE }],
    });
  }
  push('assistant', {
    id: 'msg_end',
    role: 'assistant',
    model: 'claude-sonnet-4-5',
    content: [{ type: 'text', text: 'Done.' }],
    stop_reason: 'end_turn',
  });
  return `${lines.map((l) => JSON.stringify(l)).join('\n')}\n`;
}
