// A past agent session read from its CLI's own log, before it becomes a recording: the calls the agent
// made (each its request in the agent's wire format and the answer it got), with timing and the model
// that answered, plus what could not be read (line and why) and what was left out (images, …).
import { redactValue } from '../redact';

export type { ImportSource } from '../protocol/imports';

import type { ImportSource } from '../protocol/imports';

/** One model answer of the session: what the agent sent and what came back, in the agent's wire format. */
export interface SessionCall {
  wire_api: 'messages' | 'responses';
  /** The request (an Anthropic Messages or OpenAI Responses body): everything the model was shown. */
  request: Record<string, unknown>;
  /** The answer (a Messages or Responses response body). */
  response: Record<string, unknown>;
  /** The model that answered (as the session names it). */
  model: string | null;
  finish_reason: string | null;
  usage: { prompt_tokens: number; completion_tokens: number } | null;
  /** When the request went out (the session's time of its last input line). */
  started_at: string | null;
  /** Milliseconds from the request to the last line of the answer. */
  total_ms: number | null;
  /** The session file's line of the answer (its first line). */
  line: number;
}

export interface BadLine {
  line: number;
  error: string;
}

export interface ParsedSession {
  source: ImportSource;
  /** The agent's own session id (a session file's id when it names none). */
  session_id: string;
  cwd: string | null;
  /** A title the agent gave the session, else its first user text (cut short). */
  title: string | null;
  cli_version: string | null;
  started_at: string | null;
  ended_at: string | null;
  calls: SessionCall[];
  /** Lines that are not JSON objects, or whose record could not be read. */
  bad_lines: BadLine[];
  /** What was left out and why (images, documents, synthetic messages …), counted: "image blocks left out: 2". */
  notes: string[];
}

/** Counts of what a reader left out, by what: written as notes ("images left out (the template takes text): 2"). */
export class Notes {
  private readonly counts = new Map<string, number>();
  add(what: string, n = 1): void {
    this.counts.set(what, (this.counts.get(what) ?? 0) + n);
  }
  list(): string[] {
    return [...this.counts].map(([what, n]) => `${what}: ${n}`);
  }
}

/** A session line read as a JSON object (its line number in the file). */
export type Entry = { line: number; value: Record<string, unknown> };

/**
 * The session file's lines as objects, each redacted (daemon/redact.ts) before anything reads it, so no
 * secret reaches a request, a token id or a title. A line that is not a JSON object is reported by
 * number and skipped; blank lines are ignored.
 */
export function jsonLines(text: string, bad: BadLine[]): Entry[] {
  const out: Entry[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const raw = lines[i].trim();
    if (!raw) continue;
    let value: unknown;
    try {
      value = JSON.parse(raw);
    } catch (err) {
      bad.push({ line: i + 1, error: `not JSON: ${(err as Error).message}` });
      continue;
    }
    if (!value || typeof value !== 'object' || Array.isArray(value)) {
      bad.push({ line: i + 1, error: 'not a JSON object' });
      continue;
    }
    out.push({ line: i + 1, value: redactValue(value as Record<string, unknown>) });
  }
  return out;
}

export const isObject = (v: unknown): v is Record<string, unknown> =>
  !!v && typeof v === 'object' && !Array.isArray(v);

export const str = (v: unknown): string | null => (typeof v === 'string' && v ? v : null);

/** Milliseconds between two ISO times (null when either is unknown or the order is reversed). */
export function msBetween(from: string | null, to: string | null): number | null {
  if (!from || !to) return null;
  const ms = Date.parse(to) - Date.parse(from);
  return Number.isFinite(ms) && ms >= 0 ? ms : null;
}

/** A title from a user text: its first line, at most 80 characters. */
export function titleOf(text: string): string | null {
  const first = text
    .split('\n')
    .map((l) => l.trim())
    .find((l) => l && !l.startsWith('<'));
  if (!first) return null;
  return first.length > 80 ? `${first.slice(0, 77)}…` : first;
}
