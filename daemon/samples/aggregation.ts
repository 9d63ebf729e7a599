// Loss aggregations (shared/spec/samples.md, "Loss aggregation → per-token weights"). The trainer's loss is
// L = Σ_t w_t · ℓ_t over every token of the batch, w_t = 0 where the mask is 0. Every mask-1 token of a
// sample gets the same weight, so each aggregation maps the samples' mask-1 counts m_s to one weight per
// sample. T = Σ m_s, B = number of samples.
import type { LossAggregation } from '../protocol/algorithm';

export type LossAggFn = (maskCounts: Int32Array, maxLen?: number) => Float64Array;

/** `token-mean`: w_t = 1/T (every trained token of the batch counts the same). */
export function tokenMean(m: Int32Array): Float64Array {
  let t = 0;
  for (let s = 0; s < m.length; s++) t += m[s];
  return new Float64Array(m.length).fill(t > 0 ? 1 / t : 0);
}

/** `seq-mean-token-mean`: w_t = 1/(B · m_s) (mean over a sample's tokens, then over samples). */
export function seqMeanTokenMean(m: Int32Array): Float64Array {
  const b = m.length;
  const out = new Float64Array(b);
  for (let s = 0; s < b; s++) out[s] = m[s] > 0 ? 1 / (b * m[s]) : 0;
  return out;
}

/** `seq-mean-token-sum`: w_t = 1/B (sum over a sample's tokens, mean over samples). */
export function seqMeanTokenSum(m: Int32Array): Float64Array {
  return new Float64Array(m.length).fill(m.length > 0 ? 1 / m.length : 0);
}

/** `seq-mean-token-sum-norm` (Dr. GRPO): w_t = 1/(B · max_len), max_len a constant that must be given. */
export function seqMeanTokenSumNorm(m: Int32Array, maxLen?: number): Float64Array {
  if (maxLen === undefined || !Number.isInteger(maxLen) || maxLen <= 0) {
    throw new RangeError('loss aggregation seq-mean-token-sum-norm needs max_len (a positive integer)');
  }
  return new Float64Array(m.length).fill(m.length > 0 ? 1 / (m.length * maxLen) : 0);
}

export const lossAggregations: Record<LossAggregation, LossAggFn> = {
  'token-mean': tokenMean,
  'seq-mean-token-mean': seqMeanTokenMean,
  'seq-mean-token-sum': seqMeanTokenSum,
  'seq-mean-token-sum-norm': seqMeanTokenSumNorm,
};
