// For the loss's property tests (fast-check): the values a token's logprobs take.
import fc from 'fast-check';

export const num = (min: number, max: number) =>
  fc.double({ min, max, noNaN: true, noDefaultInfinity: true });

/** A rollout logprob: known, absent (NaN), vLLM's floor, or far enough off that bypass clamps it. */
export const mu = fc.oneof(
  { weight: 6, arbitrary: num(-4, 0) },
  fc.constant(Number.NaN),
  fc.constant(-9999),
  num(-40, -25),
);
