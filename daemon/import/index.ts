// Past agent sessions into recordings: a session file read (claude-code.ts, codex.ts), its calls
// tokenized with a chosen model's template (tokenize.ts) and stored as one stopped recording whose calls
// are marked token_source "import". A session is imported once (the store keys it by source and id).
// The reading and tokenizing run in the import thread (worker.ts); the daemon's event loop only stores.
import type { NewLlmCall } from '../protocol/entities';
import type { SessionImport } from '../protocol/imports';
import { JsonText } from '../store/json-text';
import type { Store } from '../store/store';
import type { FromThread, TokenizedMessage } from './messages';
import type { ImportSource, ParsedSession } from './session';
import { type ImportThreadJob, startImportJob } from './thread';
import { importModelFolder, UnknownTemplateError } from './tokenize';

export type { SessionImport } from '../protocol/imports';
export { findSessions, type SessionFile, sessionsRoot } from './files';
export { readSession } from './read';
export type { ImportSource, ParsedSession } from './session';
export { stopImportThread } from './thread';
export {
  DEFAULT_IMPORT_MODEL,
  type ImportTokenizer,
  importModelFolder,
  importTokenizer,
  UnknownTemplateError,
} from './tokenize';

/** Sessions being imported by this process (by key): a second import of one waits for nothing, it is refused. */
const underWay = new Set<string>();

export const importKey = (source: ImportSource, sessionId: string) => `${source}:${sessionId}`;

/**
 * Imports one session file into the store as a recording (or finds its earlier import), tokenized
 * with `model`'s template (its files: importModelFolder; UnknownTemplateError when it has none or
 * they cannot be loaded). Bad lines are reported and skipped; a failure after the recording exists
 * leaves its rollout failed, with the error.
 */
export async function importSessionFile(
  store: Store,
  path: string,
  options: { source: ImportSource; model: string; modelFiles?: Record<string, string> },
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
  const folder = importModelFolder(options.model, options.modelFiles);
  let job: ImportThreadJob;
  try {
    job = startImportJob({ path, source: options.source, model: options.model, folder });
  } catch (err) {
    return { ...result, error: `the import thread did not start: ${(err as Error).message}` };
  }
  const first = await job.next();
  if (first.type === 'bad_model') throw new UnknownTemplateError(first.error);
  if (first.type !== 'session') return { ...result, error: errorOf(first) };
  const session = first.session;
  result.session_id = session.session_id;
  result.bad_lines = session.bad_lines.map((b) => `${path}:${b.line}: ${b.error}`);
  result.notes = session.notes;
  const key = importKey(options.source, session.session_id);
  if (!first.calls || underWay.has(key)) {
    job.stop();
    if (!first.calls) return { ...result, status: 'empty' };
    return { ...result, error: `session ${session.session_id} is being imported now` };
  }
  underWay.add(key);
  try {
    return await store_(store, { ...session, models: first.models }, job, key, result, options);
  } finally {
    underWay.delete(key);
  }
}

const errorOf = (m: FromThread) =>
  'error' in m ? m.error : `the import thread answered ${m.type} out of turn`;

async function store_(
  store: Store,
  session: Omit<ParsedSession, 'calls'> & { models: string[] },
  job: ImportThreadJob,
  key: string,
  result: SessionImport,
  options: { source: ImportSource; model: string },
): Promise<SessionImport> {
  let recording: { id: string; rollout_id: string };
  try {
    const made = await store.createImportedRecording({
      name: `${options.source}: ${session.title ?? session.session_id}`,
      upstream: {
        kind: 'import',
        source: options.source,
        session_id: session.session_id,
        file: result.path,
        cwd: session.cwd,
        cli_version: session.cli_version,
        models: session.models,
        tokenizer_model: options.model,
      },
      import_key: key,
      created_at: session.started_at ?? undefined,
      stopped_at: session.ended_at ?? undefined,
    });
    recording = made.recording;
    result.recording_id = recording.id;
    if (!made.created) {
      job.stop();
      const calls = await store.listRecordingCalls(recording.id);
      return { ...result, status: 'already_imported', calls: calls.length };
    }
  } catch (err) {
    job.stop();
    throw err;
  }
  job.go();
  try {
    let diverged = 0;
    for (let m = await job.next(); m.type !== 'done'; m = await job.next()) {
      if (m.type === 'skipped') {
        // an answer the template cannot render is skipped like a bad line; the session goes on
        result.bad_lines.push(`${result.path}:${m.line}: cannot render it with the template: ${m.error}`);
        continue;
      }
      if (m.type !== 'call') throw new Error(errorOf(m));
      if (m.diverged) diverged++;
      await store.recordLlmCall(newCall(m, recording, options.source));
      result.calls++;
      job.stored();
    }
    if (diverged)
      result.notes.push(
        `answers whose template rendering changed the prompt before them (response from the first differing token): ${diverged}`,
      );
    await store.completeRollout(recording.rollout_id);
    return { ...result, status: 'imported' };
  } catch (err) {
    job.stop();
    const error = `import stopped at call ${result.calls + 1}: ${(err as Error).message}`;
    await store.failRollout(recording.rollout_id, error).catch(() => undefined);
    return { ...result, error };
  }
}

function newCall(
  m: TokenizedMessage,
  recording: { id: string; rollout_id: string },
  source: ImportSource,
): NewLlmCall {
  const call = m.call;
  return {
    rollout_id: recording.rollout_id,
    attempt_id: null,
    recording_id: recording.id,
    wire_api: call.wire_api,
    stream: false,
    // the text the thread wrote is what the store writes (it does not serialise the request again)
    request: new JsonText(m.request_text, JSON.parse(m.request_text)),
    backend_request: null,
    response: call.response,
    prompt_ids: numbers(m.prompt_ids),
    response_ids: numbers(m.response_ids),
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

/** A typed array's values as a plain array (a loop: Array.from's iterator takes ~10x as long). */
function numbers(ids: Int32Array): number[] {
  const out = new Array<number>(ids.length);
  for (let i = 0; i < ids.length; i++) out[i] = ids[i];
  return out;
}
