// What the daemon and its import thread (worker.ts) say to each other: the daemon asks for a session
// file read and tokenized; the thread answers with the session, then its calls one by one (token ids
// as transferred Int32Arrays, the request as its JSON text) while the daemon stores them.
import type { ImportSource } from '../protocol/imports';
import type { ParsedSession, SessionCall } from './session';

/** A session file to read and tokenize with `model`'s template (`folder`: its tokenizer files, if not Qwen3's). */
export interface ImportJob {
  id: number;
  path: string;
  source: ImportSource;
  model: string;
  folder: string | null;
}

export type ToThread =
  | { type: 'job'; job: ImportJob }
  /** After `session`: tokenize its calls, or stop there (already imported, being imported, empty). */
  | { type: 'go' | 'stop'; id: number }
  /** One call stored: the thread may send another (it keeps at most WINDOW unstored). */
  | { type: 'stored'; id: number };

/** A call the thread tokenized; the request comes as the JSON text it sends (the store writes that text). */
export interface TokenizedMessage {
  call: Omit<SessionCall, 'request'>;
  request_text: string;
  prompt_ids: Int32Array;
  response_ids: Int32Array;
  diverged: boolean;
}

export type FromThread = { id: number } & (
  | { type: 'bad_model'; error: string }
  | { type: 'unreadable'; error: string }
  /** The session read, without its calls (`models`: those that answered; `calls`: how many). */
  | { type: 'session'; session: Omit<ParsedSession, 'calls'>; models: string[]; calls: number }
  | ({ type: 'call' } & TokenizedMessage)
  /** An answer the template cannot render (reported like a bad line). */
  | { type: 'skipped'; line: number; error: string }
  | { type: 'done' }
  | { type: 'failed'; error: string }
);

/** Calls tokenized ahead of the daemon's store: enough to keep both busy, few enough to bound memory. */
export const WINDOW = 2;
