// Importing a long past session (daemon/import/): a synthetic Claude Code session of N tool-calling
// turns (each tool result ~3 KB of code), read, tokenized with Qwen3's template (every call's prompt is
// the whole history so far) and stored in a temporary SQLite store.
//   import.claude-code  turns, calls, prompt_tokens (all calls), ms (the whole import), ms_per_call,
//                       last_prompt_tokens (the longest prompt), loop_delay_max_ms (the event loop's
//                       longest wait while it ran: what a proxy request could wait)
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { importSessionFile, importTokenizer } from '../daemon/import';
import { openStore } from '../daemon/store/open';
import { emit, round } from './emit';

const CODE = Array.from(
  { length: 60 },
  (_, i) => `    total_${i} = sum(item.price * item.qty for item in cart_${i})  # line ${i}`,
).join('\n');

function session(turns: number): string {
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

export default async function main(): Promise<void> {
  const tokenizer = importTokenizer('Qwen/Qwen3-8B');
  for (const turns of [25, 100]) {
    const dir = mkdtempSync(join(tmpdir(), 'hrl-bench-import-'));
    const file = join(dir, 'session.jsonl');
    writeFileSync(file, session(turns));
    const store = await openStore('sqlite', join(dir, 'store'));
    try {
      const lag = monitorEventLoopDelay({ resolution: 10 });
      lag.enable();
      const t0 = performance.now();
      const r = await importSessionFile(store, file, {
        source: 'claude-code',
        model: 'Qwen/Qwen3-8B',
        tokenizer,
      });
      const ms = performance.now() - t0;
      lag.disable();
      const calls = await store.listRecordingCalls(r.recording_id!);
      emit('import.claude-code', {
        turns,
        calls: r.calls,
        prompt_tokens: calls.reduce((n, c) => n + (c.prompt_ids?.length ?? 0), 0),
        last_prompt_tokens: calls.at(-1)?.prompt_ids?.length ?? 0,
        ms: round(ms, 0),
        ms_per_call: round(ms / r.calls, 1),
        // the longest the event loop (the daemon's proxy requests) waited while the import ran
        loop_delay_max_ms: round(lag.max / 1e6, 0),
      });
    } finally {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }
}
