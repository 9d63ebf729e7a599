// A call's sampling parameters as the trajectory view shows them: a short line for the call's header
// and a tooltip with every field and the harness's values a run replaced. Pure.
import type { CallSampling } from '../../daemon/protocol/entities';
import { formatNumber } from './format';

const NAMES: [keyof CallSampling, string][] = [
  ['temperature', 'T'],
  ['top_p', 'top-p'],
  ['top_k', 'top-k'],
  ['min_p', 'min-p'],
  ['repetition_penalty', 'repetition'],
  ['presence_penalty', 'presence'],
  ['frequency_penalty', 'frequency'],
  ['seed', 'seed'],
  ['max_tokens', 'max tokens'],
];

const shown = (key: keyof CallSampling, v: unknown): string =>
  v === null || v === undefined
    ? 'backend default'
    : key === 'top_k' && typeof v === 'number' && v <= 0
      ? 'off'
      : typeof v === 'number'
        ? formatNumber(v, 4)
        : JSON.stringify(v);

/** "T 1 · top-p 1 · top-k off (run's)", "T default (not sent)"; null when nothing is known. */
export function samplingLine(s: CallSampling | null): string | null {
  if (!s) return null;
  const t = s.temperature === null ? 'T backend default' : `T ${formatNumber(s.temperature, 4)}`;
  const trunc = [
    s.top_p !== null && s.top_p < 1 && `top-p ${formatNumber(s.top_p, 4)}`,
    s.top_k !== null && s.top_k > 0 && `top-k ${s.top_k}`,
    s.min_p !== null && s.min_p > 0 && `min-p ${formatNumber(s.min_p, 4)}`,
  ].filter(Boolean);
  const whose = s.source === 'run' ? "run's" : "harness's";
  const replaced = s.overridden && Object.keys(s.overridden).length > 0 ? ', harness values replaced' : '';
  const constrained = s.constrained?.length
    ? ` · constrained by ${s.constrained.join(', ')}: not trained on`
    : '';
  return `${[t, ...trunc].join(' · ')} (${whose}${replaced})${constrained}`;
}

/** Every field, one per line, then what the harness had asked for where the run's values replaced it. */
export function samplingTitle(s: CallSampling): string {
  const lines = NAMES.map(([k, name]) => `${name}: ${shown(k, s[k])}`);
  lines.unshift(
    s.source === 'run'
      ? "sampling set by the proxy from the run's algorithm.sampling"
      : 'sampling as the harness sent it (backend default: not sent, so the server chose)',
  );
  for (const [k, v] of Object.entries(s.overridden ?? {}))
    lines.push(`harness asked ${k}: ${shown(k as keyof CallSampling, v)}`);
  if (s.constrained?.length)
    lines.push(
      `decoding constrained by ${s.constrained.join(', ')}: its logprobs are not the policy's, so its tokens are context, out of the loss`,
    );
  return lines.join('\n');
}
