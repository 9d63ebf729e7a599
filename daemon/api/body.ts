// Request bodies as JSON text, checked before anything walks them: nesting is bounded (JSON.parse
// itself copes with any depth, but JSON.stringify, zod, redaction and every other recursive walk
// would overflow the stack on a body like 10,000 nested `[`), and `null` is not an object body.
import { ApiError } from './errors';

/**
 * The deepest nesting of arrays and objects a request body may have. Real requests stay far below
 * (a tool's JSON Schema nests a few dozen levels at most); every recursive walk is safe far above.
 */
export const MAX_JSON_DEPTH = 128;

/**
 * Does the JSON text `raw` nest arrays/objects deeper than `max`? One pass over the text; string
 * contents are skipped with indexOf (they are most of a chat request), so the check costs little
 * next to JSON.parse. Meant for text that JSON.parse accepts; on other text the answer is a guess.
 */
export function nestsDeeperThan(raw: string, max: number = MAX_JSON_DEPTH): boolean {
  let depth = 0;
  const n = raw.length;
  for (let i = 0; i < n; i++) {
    const c = raw.charCodeAt(i);
    if (c === 34 /* " */) {
      let j = i;
      for (;;) {
        j = raw.indexOf('"', j + 1);
        if (j < 0) return false;
        let slashes = 0;
        for (let k = j - 1; raw.charCodeAt(k) === 92 /* \ */; k--) slashes++;
        if ((slashes & 1) === 0) break;
      }
      i = j;
    } else if (c === 91 /* [ */ || c === 123 /* { */) {
      if (++depth > max) return true;
    } else if (c === 93 /* ] */ || c === 125 /* } */) depth--;
  }
  return false;
}

/**
 * JSON.parse for text from outside (a model's tool-call arguments, a backend's answer) that also
 * refuses nesting deeper than MAX_JSON_DEPTH, with a SyntaxError like malformed JSON gets.
 */
// biome-ignore lint/suspicious/noExplicitAny: typed like JSON.parse, which it stands in for
export function parseBoundedJson(text: string): any {
  if (nestsDeeperThan(text)) throw new SyntaxError(`JSON nests deeper than ${MAX_JSON_DEPTH} levels`);
  return JSON.parse(text);
}

/** What went wrong with a body, for the caller's own error type. */
export interface BodyProblem {
  code: 'invalid_json' | 'too_deep' | 'null_body';
  message: string;
}

/**
 * Parses a JSON request body: undefined for an empty one, else the value, or the problem (malformed,
 * nested deeper than MAX_JSON_DEPTH, or `null`).
 */
export function parseJsonBody(raw: string): { value: unknown } | { problem: BodyProblem } {
  if (raw.trim() === '') return { value: undefined };
  if (nestsDeeperThan(raw))
    return {
      problem: {
        code: 'too_deep',
        message: `the request body nests arrays/objects deeper than ${MAX_JSON_DEPTH} levels`,
      },
    };
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch (err) {
    return { problem: { code: 'invalid_json', message: `malformed JSON body: ${(err as Error).message}` } };
  }
  if (value === null)
    return { problem: { code: 'null_body', message: 'the request body must be a JSON object, not null' } };
  return { value };
}

/** A fastify content-type parser for application/json with the API's errors (400 naming `body`). */
export function apiJsonParser(
  _req: unknown,
  text: string | Buffer,
  done: (err: Error | null, body?: unknown) => void,
): void {
  const parsed = parseJsonBody(String(text));
  if ('problem' in parsed) {
    const code = parsed.problem.code === 'invalid_json' ? 'invalid_json' : 'invalid_request';
    done(new ApiError(400, code, parsed.problem.message, 'body'), undefined);
  } else done(null, parsed.value);
}
