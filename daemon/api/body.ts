// Request bodies as JSON text, checked before anything else walks them: nesting is bounded (V8's
// JSON.parse copes with any depth, but JSON.stringify, zod, redaction and every other recursive walk
// would overflow the stack on a body like 10,000 nested `[`), and `null` is not an object body.
import type { IncomingMessage } from 'node:http';
import { ApiError } from './errors';

/**
 * The most of a refused (too large) body that is read and dropped before its 413, and for how long:
 * a client that sends the whole body before reading the answer (Python's requests, curl) gets the
 * 413 instead of a broken pipe. Past either bound the answer closes the connection.
 */
export const DISCARD_LIMIT_BYTES = 256 * 1024 * 1024;
export const DISCARD_LIMIT_MS = 30_000;

/**
 * Reads and drops the rest of `req` (of which `read` bytes were read already); resolves true once it
 * ended within DISCARD_LIMIT_BYTES and DISCARD_LIMIT_MS, false otherwise (then close the connection).
 */
export function discardBody(req: IncomingMessage, read = 0): Promise<boolean> {
  if (req.complete) return Promise.resolve(true);
  return new Promise((resolve) => {
    let size = read;
    let settled = false;
    const done = (ended: boolean) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onClose);
      req.off('close', onClose);
      if (!ended) req.pause();
      resolve(ended);
    };
    const onData = (c: Buffer) => {
      size += c.length;
      if (size > DISCARD_LIMIT_BYTES) done(false);
    };
    const onEnd = () => done(true);
    const onClose = () => done(req.complete);
    const timer = setTimeout(() => done(false), DISCARD_LIMIT_MS);
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onClose);
    req.on('close', onClose);
    req.resume();
  });
}

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

/**
 * Before a 413 goes out: the rest of the body is read and dropped, and the connection fastify marked
 * `Connection: close` (it stops reading at the limit) stays open when that ended within the bounds.
 */
export async function keepConnectionFor413(
  e: ApiError,
  req: IncomingMessage,
  reply: { removeHeader(name: string): unknown },
): Promise<void> {
  if (e.status === 413 && (await discardBody(req))) reply.removeHeader('connection');
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
