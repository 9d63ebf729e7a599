// Past agent sessions into recordings: a session file read (claude-code.ts, codex.ts), its calls
// tokenized with a chosen model's template (tokenize.ts) and stored as one stopped recording whose calls
// are marked token_source "import". A session is imported once (the store keys it by source and id).
import type { NewLlmCall } from '../protocol/entities';
import type { SessionImport } from '../protocol/imports';
import type { Store } from '../store/store';
import { readClaudeCodeSession } from './claude-code';
import { readCodexSession } from './codex';
import { readSessionText } from './files';
import { type BadLine, type ImportSource, jsonLines, type ParsedSession, slicer } from './session';
import { endOfTurnIds, type ImportTokenizer, sessionRenderer, tokenizeCall } from './tokenize';

export type { SessionImport } from '../protocol/imports';
export { findSessions, type SessionFile, sessionsRoot } from './files';
export type { ImportSource, ParsedSession } from './session';
export {
  DEFAULT_IMPORT_MODEL,
  type ImportTokenizer,
  importTokenizer,
  UnknownTemplateError,
} from './tokenize';

/** A session file's text read as its calls; the event loop gets turns while it is parsed (`tick`). */
export async function readSession(
  source: ImportSource,
  text: string,
  file: string,
  tick: () => Promise<void> = slicer(),
): Promise<ParsedSession> {
  const bad: BadLine[] = [];
  const entries = await jsonLines(text, bad, tick);
  return source === 'claude-code'
    ? readClaudeCodeSession(entries, bad, file)
    : readCodexSession(entries, bad, file);
}

/** Sessions being imported by this process (by key): a second import of one waits for nothing, it is refused. */
const underWay = new Set<string>();

export const importKey = (source: ImportSource, sessionId: string) => `${source}:${sessionId}`;

/**
 * Imports one session file into the store as a recording (or finds its earlier import). Bad lines are
 * reported and skipped; a failure after the recording exists leaves its rollout failed, with the error.
 */
export async function importSessionFile(
  store: Store,
  path: string,
  options: { source: ImportSource; model: string; tokenizer: ImportTokenizer },
): Promise<SessionImport> {
  const result: SessionImport = {
    path,
    session_id: null,
    status: 'failed',
    recording_id: null,
    calls: 0,
    bad_lines: [],
    notes: [],
    error: null,
  };
  let text: string;
  try {
    text = await readSessionText(path);
  } catch (err) {
    return { ...result, error: `cannot read ${path}: ${(err as Error).message}` };
  }
  const tick = slicer();
  const session = await readSession(options.source, text, path, tick);
  result.session_id = session.session_id;
  result.bad_lines = session.bad_lines.map((b) => `${path}:${b.line}: ${b.error}`);
  result.notes = session.notes;
  if (!session.calls.length) return { ...result, status: 'empty' };
  const key = importKey(options.source, session.session_id);
  if (underWay.has(key)) return { ...result, error: `session ${session.session_id} is being imported now` };
  underWay.add(key);
  try {
    return await store_(store, session, key, result, { ...options, tick });
  } finally {
    underWay.delete(key);
  }
}

async function store_(
  store: Store,
  session: ParsedSession,
  key: string,
  result: SessionImport,
  options: { source: ImportSource; model: string; tokenizer: ImportTokenizer; tick: () => Promise<void> },
): Promise<SessionImport> {
  const models = [...new Set(session.calls.map((c) => c.model).filter((m) => m !== null))];
  const { recording, created } = await store.createImportedRecording({
    name: `${options.source}: ${session.title ?? session.session_id}`,
    upstream: {
      kind: 'import',
      source: options.source,
      session_id: session.session_id,
      file: result.path,
      cwd: session.cwd,
      cli_version: session.cli_version,
      models,
      tokenizer_model: options.model,
    },
    import_key: key,
    created_at: session.started_at ?? undefined,
    stopped_at: session.ended_at ?? undefined,
  });
  result.recording_id = recording.id;
  if (!created) {
    const calls = await store.listRecordingCalls(recording.id);
    return { ...result, status: 'already_imported', calls: calls.length };
  }
  try {
    const endIds = await endOfTurnIds(options.tokenizer);
    const render = sessionRenderer(options.tokenizer, options.tick);
    let diverged = 0;
    for (const call of session.calls) {
      let tokens: Awaited<ReturnType<typeof tokenizeCall>>;
      try {
        tokens = await tokenizeCall(render, call, endIds, options.tick);
      } catch (err) {
        // an answer the template cannot render is skipped like a bad line; the session goes on
        result.bad_lines.push(
          `${result.path}:${call.line}: cannot render it with the template: ${(err as Error).message}`,
        );
        continue;
      }
      if (tokens.diverged) diverged++;
      await store.recordLlmCall(newCall(call, tokens, recording, options.source));
      result.calls++;
    }
    if (diverged)
      result.notes.push(
        `answers whose template rendering changed the prompt before them (response from the first differing token): ${diverged}`,
      );
    await store.completeRollout(recording.rollout_id);
    return { ...result, status: 'imported' };
  } catch (err) {
    const error = `import stopped at call ${result.calls + 1}: ${(err as Error).message}`;
    await store.failRollout(recording.rollout_id, error).catch(() => undefined);
    return { ...result, error };
  }
}

function newCall(
  call: ParsedSession['calls'][number],
  tokens: { prompt_ids: number[]; response_ids: number[] },
  recording: { id: string; rollout_id: string },
  source: ImportSource,
): NewLlmCall {
  return {
    rollout_id: recording.rollout_id,
    attempt_id: null,
    recording_id: recording.id,
    wire_api: call.wire_api,
    stream: false,
    request: call.request,
    backend_request: null,
    response: call.response,
    prompt_ids: tokens.prompt_ids,
    response_ids: tokens.response_ids,
    response_logprobs: null,
    token_source: 'import',
    bridge: null,
    sampling: null,
    finish_reason: call.finish_reason,
    usage: call.usage,
    model: call.model,
    model_version: null,
    backend: `import:${source}`,
    status: 'ok',
    error: null,
    http_status: null,
    tags: [],
    queue_ms: null,
    ttft_ms: null,
    total_ms: call.total_ms,
    created_at: call.started_at ?? undefined,
  };
}
