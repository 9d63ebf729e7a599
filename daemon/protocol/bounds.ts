// Bounds every schema shares: durations a timer can honour, text both stores can hold, and cursors
// shaped like the ids they continue from. Declared once so each boundary refuses the same inputs.
import { z } from 'zod';

/**
 * setTimeout's longest delay: 2^31-1 ms (about 24.8 days). A longer one overflows and fires at once
 * (Node prints a TimeoutOverflowWarning and uses 1 ms), so every attempt would time out immediately.
 */
export const MAX_TIMER_MS = 2_147_483_647;
/** MAX_TIMER_MS in whole seconds: 2,147,483 s. */
export const MAX_TIMER_S = Math.floor(MAX_TIMER_MS / 1000);

/** A positive duration in milliseconds that a timer can honour (an integer up to MAX_TIMER_MS). */
export const durationMs = () =>
  z
    .number()
    .int()
    .positive()
    .max(MAX_TIMER_MS, {
      message: `must be at most ${MAX_TIMER_MS} ms (about 24.8 days, the longest timer)`,
    });

/** A positive duration in seconds that a timer can honour (at most MAX_TIMER_S). */
export const durationS = () =>
  z
    .number()
    .positive()
    .max(MAX_TIMER_S, { message: `must be at most ${MAX_TIMER_S} s (about 24.8 days, the longest timer)` });

/**
 * Text the stores keep as TEXT: no NUL (U+0000). PostgreSQL's text cannot hold one (SQLite's can), so
 * both stores refuse it the same way, at the boundary, with a 400 naming the field. JSON values keep
 * their NULs: they are stored as JSON text, where a NUL is the escape `\u0000`.
 */
export const NO_NUL_MESSAGE = 'must not contain a NUL character (U+0000)';
export const hasNul = (s: string): boolean => s.includes('\u0000');
export const storedText = () => z.string().refine((s) => !hasNul(s), { message: NO_NUL_MESSAGE });

/** An http:// or https:// URL (no file:, javascript:, gopher: … that a fetch would follow elsewhere). */
export const httpUrl = () => z.url({ protocol: /^https?$/, message: 'must be an http:// or https:// URL' });

/** An id: 1 to 200 characters, none of them a control character. */
const ID_MAX = 200;
// biome-ignore lint/suspicious/noControlCharactersInRegex: the control characters are what it refuses
const CONTROL_CHARACTERS = /[\u0000-\u001f\u007f]/;

export const Id = z
  .string()
  .min(1)
  .max(ID_MAX)
  .refine((s) => !CONTROL_CHARACTERS.test(s), { message: 'must not contain control characters' });

/** Whether Id accepts `s`, without zod (the proxy checks every call's rollout id); Id words a refusal. */
export const isId = (s: string): boolean =>
  s.length >= 1 && s.length <= ID_MAX && !CONTROL_CHARACTERS.test(s);

/**
 * A page cursor: the last id of the previous page (`next_cursor`), so an id of the listed kind
 * (`rol_…`, `run_…`, `grp_…`). Anything else would silently page from an arbitrary place.
 */
export const cursorOf = (prefix: string) =>
  z.string().regex(new RegExp(`^${prefix}_[0-9a-hjkmnp-tv-z]{22}$`), {
    message: `not a cursor: use the next_cursor of the previous page (a ${prefix}_… id)`,
  });
