// A session file's text read as its calls, by the reader of the CLI that wrote it.
import { readClaudeCodeSession } from './claude-code';
import { readCodexSession } from './codex';
import { type BadLine, type ImportSource, jsonLines, type ParsedSession } from './session';

export function readSession(source: ImportSource, text: string, file: string): ParsedSession {
  const bad: BadLine[] = [];
  const entries = jsonLines(text, bad);
  return source === 'claude-code'
    ? readClaudeCodeSession(entries, bad, file)
    : readCodexSession(entries, bad, file);
}
