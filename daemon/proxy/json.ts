// A parsed wire body (a harness request, a backend answer, a chunk), loosely typed on purpose, and how a
// backend answer is parsed (bounded).
// Each wire API's fields are read where they are used; what comes from outside is checked at the
// boundary (requests.ts's schemas, parseBoundedJson), not by this type.
import { parseBoundedJson } from '../api/body';

// biome-ignore lint/suspicious/noExplicitAny: fields of a wire body are read by name, unchecked here
export type Json = Record<string, any>;

/**
 * A backend's JSON answer, or null when it is not JSON or nests deeper than MAX_JSON_DEPTH (nothing
 * may walk such a value: the record keeps the text instead).
 */
export function parseBackendJson(text: string): Json | null {
  try {
    return parseBoundedJson(text);
  } catch {
    return null;
  }
}
