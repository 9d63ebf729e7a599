// How numbers and counts read in the webviews and the sidebar: a few significant digits, no float
// noise (0.6499999999999999 → 0.65), and counts with the right plural ("1 attempt", "2 attempts"). Pure.
import { answered } from '../../daemon/protocol/entities';

/** A number rounded to `digits` significant digits, without trailing zeros or exponent for everyday sizes. */
export function formatNumber(x: number | null | undefined, digits = 3): string {
  if (x === null || x === undefined) return '—';
  if (!Number.isFinite(x)) return Number.isNaN(x) ? 'NaN' : x > 0 ? '∞' : '−∞';
  if (Number.isInteger(x) && Math.abs(x) < 1e15) return minus(String(x));
  const abs = Math.abs(x);
  if (abs !== 0 && (abs < 1e-4 || abs >= 1e15))
    return minus(x.toExponential(digits - 1).replace(/\.?0+e/, 'e'));
  // toPrecision keeps `digits` significant digits; Number() drops the trailing zeros
  return minus(String(Number(x.toPrecision(Math.max(digits, Math.ceil(Math.log10(abs + 1)))))));
}

/** "1 attempt", "2 attempts", "0 prefix breaks"; `plural` for words that do not just add s. */
export function count(n: number, singular: string, plural = `${singular}s`): string {
  return `${formatNumber(n)} ${n === 1 ? singular : plural}`;
}

/** A signed value: "+0.5", "−0.25", "0". */
export function signed(x: number, digits = 3): string {
  return x > 0 ? `+${formatNumber(x, digits)}` : formatNumber(x, digits);
}

/** Typographic minus, so a negative value does not read as a hyphen. */
function minus(s: string): string {
  return s.replace(/^-/, '−');
}

/**
 * The class an llm call's status shows in: none for ok, `warning` for an answer that cannot be
 * trained on (no_choices, no_token_ids, logprobs_mismatch), `error` for a failed or cancelled call.
 */
export function statusClass(status: string): '' | 'warning' | 'error' {
  if (status === 'ok') return '';
  return answered(status) ? 'warning' : 'error';
}
