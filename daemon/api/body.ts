// Request bodies as JSON text, checked before anything else walks them: nesting is bounded (V8's
// JSON.parse copes with any depth, but JSON.stringify, zod, redaction and every other recursive walk
// would overflow the stack on a body like 10,000 nested `[`), and `null` is not an object body.
import { ApiError } from './errors';

/**
 * The deepest nesting of arrays and objects a request body may have. Real requests stay far below
 * (a tool's JSON Schema nests a few dozen levels at most); every recursive walk is safe far above.
 */
export const MAX_JSON_DEPTH = 128;

/**
 * Does `value` (as JSON.parse made it) nest arrays/objects deeper than `max`? An explicit stack, no
 * recursion, and only objects and arrays are visited (string contents never are), so it costs a
 * small fraction of the JSON.parse before it; it stops at the first level past `max`.
 */
export function nestsDeeperThan(value: unknown, max: number = MAX_JSON_DEPTH): boolean {
  if (value === null || typeof value !== 'object') return false;
  if (max < 1) return true;
  const stack: object[] = [value];
  const depths: number[] = [1];
  while (stack.length > 0) {
    const o = stack.pop() as Record<string, unknown>;
    const d = (depths.pop() as number) + 1;
    if (Array.isArray(o)) {
      for (let i = 0; i < o.length; i++) {
        const x = o[i];
        if (x !== null && typeof x === 'object') {
          if (d > max) return true;
          stack.push(x);
          depths.push(d);
        }
      }
    } else {
      for (const k in o) {
        const x = o[k];
        if (x !== null && typeof x === 'object') {
          if (d > max) return true;
          stack.push(x);
          depths.push(d);
        }
      }
    }
  }
  return false;
}

/**
 * Does `text` hold at most `max` opening brackets (`[` and `{`, inside strings too)? Then nothing
 * parsed from it nests deeper than `max`, and the walk is not needed: a backend's answer with 10k
 * prompt ids has a few dozen brackets and one long array the walk would visit element by element.
 * It stops at the (max+1)th bracket.
 */
function fewBrackets(text: string, max: number): boolean {
  let n = 0;
  for (let i = text.indexOf('['); i >= 0; i = text.indexOf('[', i + 1)) if (++n > max) return false;
  for (let i = text.indexOf('{'); i >= 0; i = text.indexOf('{', i + 1)) if (++n > max) return false;
  return true;
}

/** Whether `value`, parsed from `text`, nests deeper than `max` (the text's brackets counted first). */
export const tooDeep = (text: string, value: unknown, max: number = MAX_JSON_DEPTH): boolean =>
  !fewBrackets(text, max) && nestsDeeperThan(value, max);

/**
 * JSON.parse for text from outside (a model's tool-call arguments, a backend's answer) that also
 * refuses nesting deeper than MAX_JSON_DEPTH, with a SyntaxError like malformed JSON gets.
 */
// biome-ignore lint/suspicious/noExplicitAny: typed like JSON.parse, which it stands in for
export function parseBoundedJson(text: string): any {
  const value = JSON.parse(text);
  if (tooDeep(text, value)) throw new SyntaxError(`JSON nests deeper than ${MAX_JSON_DEPTH} levels`);
  return value;
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
  let value: unknown;
  try {
    value = JSON.parse(raw); // iterative in V8: any depth parses; the check below bounds what follows
  } catch (err) {
    return { problem: { code: 'invalid_json', message: `malformed JSON body: ${(err as Error).message}` } };
  }
  if (tooDeep(raw, value))
    return {
      problem: {
        code: 'too_deep',
        message: `the request body nests arrays/objects deeper than ${MAX_JSON_DEPTH} levels`,
      },
    };
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
