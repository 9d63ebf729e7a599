// The local Qwen3 tokenizer renders the chat template the way transformers does (Python jinja2 with
// HF's settings), so bridged prompts agree with what vLLM would have rendered.
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { localQwen3Tokenizer, qwen3ChatTemplate } from '../../tokenize/qwen3';
import { noThinkingTurn, thinkingHistory, readFileTools as tools } from '../../tokenize/test-chats';
import { templateMessages } from './tokenizer';

const tok = localQwen3Tokenizer();

const hasJinja2 = spawnSync('python3', ['-c', 'import jinja2'], { stdio: 'ignore' }).status === 0;

/** transformers' apply_chat_template environment, minus the tokenizer. */
const PY = `
import json, sys
from jinja2.sandbox import ImmutableSandboxedEnvironment
from jinja2.ext import loopcontrols
job = json.load(sys.stdin)
env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])
env.filters['tojson'] = lambda x, indent=None, separators=None, sort_keys=False: json.dumps(x, ensure_ascii=False, indent=indent, separators=separators, sort_keys=sort_keys)
t = env.from_string(job['template'])
out = []
for c in job['cases']:
    kw = dict(c.get('kwargs') or {})
    if c.get('tools'): kw['tools'] = c['tools']
    out.append(t.render(messages=c['messages'], add_generation_prompt=c['gen'], bos_token='', eos_token='<|im_end|>', **kw))
print(json.dumps(out))
`;

const cases = [
  { messages: [{ role: 'user', content: 'hi' }], gen: true },
  {
    messages: [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'hi' },
    ],
    gen: true,
    tools,
  },
  {
    messages: [
      { role: 'user', content: 'read a' },
      {
        role: 'assistant',
        content: '',
        reasoning_content: '\nneed it\n',
        tool_calls: [
          { id: 'c1', type: 'function', function: { name: 'read_file', arguments: '{"path":"a","n":2}' } },
          { id: 'c2', type: 'function', function: { name: 'read_file', arguments: '{"path":"ü/€"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'c1', content: 'A' },
      { role: 'tool', tool_call_id: 'c2', content: 'B' },
    ],
    gen: true,
    tools,
  },
  {
    messages: thinkingHistory,
    gen: false,
  },
  {
    messages: noThinkingTurn,
    gen: true,
    kwargs: { enable_thinking: false },
  },
];

describe('local Qwen3 chat template', () => {
  it.skipIf(!hasJinja2)(
    'renders exactly like transformers (Python jinja2) for tools, tool calls and thinking',
    async () => {
      const prepared = cases.map((c) => ({ ...c, messages: templateMessages(c.messages) }));
      const py = spawnSync('python3', ['-c', PY], {
        input: JSON.stringify({ template: qwen3ChatTemplate, cases: prepared }),
        encoding: 'utf8',
      });
      expect(py.status, py.stderr).toBe(0);
      const expected: string[] = JSON.parse(py.stdout);
      for (const [i, c] of cases.entries()) {
        const ids = await tok.render(c.messages, c.tools, c.gen, c.kwargs);
        expect(await tok.decode(ids)).toBe(expected[i]);
        expect(ids).toEqual(tok.encode(expected[i]));
      }
    },
  );

  it('maps special-token text to single special ids and decodes them back', async () => {
    const ids = tok.encode('<|im_start|>user\nhi<|im_end|>') as number[];
    expect(ids[0]).toBe(151644);
    expect(ids.at(-1)).toBe(151645);
    expect(await tok.decode(ids)).toBe('<|im_start|>user\nhi<|im_end|>');
  });
});
