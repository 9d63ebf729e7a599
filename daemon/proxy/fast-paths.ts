// The proxy's hand-written fast paths behind one switch. Each reads or writes vLLM's JSON from its text
// where the general path would build objects: a stream chunk scanned (chunk-scan.ts), a whole answer
// parsed without what the harness will not see (answer-scan.ts), the harness's own request text sent
// on with the proxy's keys appended (pre-serialised JSON, dispatch.ts backendText), a chat answer's
// prompt ids read from where the rollout's last ones end (prompt-ids.ts), and the daemon tokenizer's
// word memo and split (tokenize/word-ids.ts, read when a tokenizer is loaded). Off, every answer
// and chunk goes through JSON.parse and every backend request through JSON.stringify; the records are
// the same either way (test/e2e/proxy-fast-paths.test.ts); `npm run bench -- answer-parse
// stream-chunk` measures what they save. HARNESS_RL_FAST_PATHS=off turns them off, to rule them out
// when a record looks wrong.
import { parseChatAnswer, parseWithoutPromptIds } from './answer-scan';
import type { BackendKind } from './assemble';
import { backendText } from './dispatch';
import { type Json, parseBackendJson } from './json';
import type { PromptIdsMemo } from './prompt-ids';

let on = process.env.HARNESS_RL_FAST_PATHS !== 'off';

/** Whether the fast paths are on (HARNESS_RL_FAST_PATHS, or setFastPaths). */
export function fastPaths(): boolean {
  return on;
}

/** Turns the fast paths on or off for the calls that start after it (tests compare both). */
export function setFastPaths(value: boolean): void {
  on = value;
}

/**
 * A whole backend answer: a bridged call's without the prompt ids vLLM echoes (the bridge has its own),
 * a chat answer whose logprob entries the harness will not see with each entry read as its logprob.
 */
export function parseAnswer(
  text: string,
  o: {
    kind: BackendKind;
    bridged: boolean;
    entries: boolean;
    /** The rollout's last prompt ids, which a chat answer's may continue (prompt-ids.ts). */
    prompt?: { memo: PromptIdsMemo; rolloutId: string };
  },
): Json | null {
  if (!on) return parseBackendJson(text);
  if (o.bridged) return parseWithoutPromptIds(text);
  if (o.kind !== 'chat') return parseBackendJson(text);
  const parse = o.entries ? parseBackendJson : (t: string) => parseChatAnswer(t);
  return o.prompt ? o.prompt.memo.parse(o.prompt.rolloutId, text, parse) : parse(text);
}

/** A stream chunk's data that was not scanned: a bridged call's without the echoed prompt ids. */
export function parseChunk(data: string, bridged: boolean): Json | null {
  return on && bridged ? parseWithoutPromptIds(data) : parseBackendJson(data);
}

/** The backend body's text made from the harness's (dispatch.ts backendText); null: serialise it. */
export function harnessText(raw: string | undefined, harness: Json, backend: Json): string | null {
  return on ? backendText(raw, harness, backend) : null;
}
