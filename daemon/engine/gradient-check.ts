// For the engine's tests: an analytic gradient against central finite differences of the loss.
import type { ModelConfig } from './layout';

/** The tiny model the gradient checks run on (every parameter cheap to perturb). */
export const GRADIENT_CHECK_MODEL: ModelConfig = {
  vocab: 23,
  dModel: 8,
  nHeads: 2,
  nLayers: 2,
  dFf: 12,
  maxLen: 16,
  alibi: [0.5, 0.1],
};

/**
 * The worst relative gap between `grad` and (loss(p + h) − loss(p − h)) / 2h over every 5th parameter
 * of `params` (changed in place and restored), and how many were compared (both sides near 0 skipped).
 */
export function gradientGap(
  params: Float64Array,
  loss: () => number,
  grad: ArrayLike<number>,
): { worst: number; checked: number } {
  let worst = 0;
  let checked = 0;
  for (let i = 0; i < params.length; i += 5) {
    const o = params[i];
    params[i] = o + 1e-5;
    const a = loss();
    params[i] = o - 1e-5;
    const b = loss();
    params[i] = o;
    const num = (a - b) / 2e-5;
    if (Math.abs(num) + Math.abs(grad[i]) < 1e-9) continue;
    worst = Math.max(worst, Math.abs(num - grad[i]) / (Math.abs(num) + Math.abs(grad[i])));
    checked++;
  }
  return { worst, checked };
}
