// The row kernels of the reference model (float64, offsets into flat arrays), shared by the
// full-sequence pass (sequence.ts) and the incremental one (Model.step), so their logprobs agree.

const EPS = 1e-5;

/** y[yo + j] (+)= Σ_i x[xo + i] · W[wo + i·out + j] */
export function matvec(
  x: Float64Array,
  xo: number,
  W: Float64Array,
  wo: number,
  nIn: number,
  nOut: number,
  y: Float64Array,
  yo: number,
  accumulate: boolean,
): void {
  if (!accumulate) y.fill(0, yo, yo + nOut);
  for (let i = 0; i < nIn; i++) {
    const xi = x[xo + i];
    if (xi === 0) continue;
    const row = wo + i * nOut;
    for (let j = 0; j < nOut; j++) y[yo + j] += xi * W[row + j];
  }
}

/** dx[xo+i] += Σ_j dy[yo+j] · W[wo + i·out + j];  dW[wo + i·out + j] += x[xo+i] · dy[yo+j] */
export function matvecBack(
  x: Float64Array,
  xo: number,
  W: Float64Array,
  dW: Float64Array,
  wo: number,
  nIn: number,
  nOut: number,
  dy: Float64Array,
  yo: number,
  dx: Float64Array | null,
  dxo: number,
): void {
  for (let i = 0; i < nIn; i++) {
    const xi = x[xo + i];
    const row = wo + i * nOut;
    let acc = 0;
    for (let j = 0; j < nOut; j++) {
      const g = dy[yo + j];
      acc += g * W[row + j];
      dW[row + j] += xi * g;
    }
    if (dx) dx[dxo + i] += acc;
  }
}

/** y = x · rms(x)⁻¹ · g ; returns 1/rms */
export function rmsnorm(
  x: Float64Array,
  xo: number,
  g: Float64Array,
  go: number,
  d: number,
  y: Float64Array,
  yo: number,
) {
  let ss = 0;
  for (let i = 0; i < d; i++) ss += x[xo + i] * x[xo + i];
  const r = 1 / Math.sqrt(ss / d + EPS);
  for (let i = 0; i < d; i++) y[yo + i] = x[xo + i] * r * g[go + i];
  return r;
}

export function rmsnormBack(
  x: Float64Array,
  xo: number,
  r: number,
  g: Float64Array,
  dg: Float64Array,
  go: number,
  d: number,
  dy: Float64Array,
  yo: number,
  dx: Float64Array,
  dxo: number,
) {
  let dot = 0;
  for (let i = 0; i < d; i++) {
    dot += dy[yo + i] * g[go + i] * x[xo + i];
    dg[go + i] += dy[yo + i] * x[xo + i] * r;
  }
  const k = (r * r * r * dot) / d;
  for (let i = 0; i < d; i++) dx[dxo + i] += r * g[go + i] * dy[yo + i] - k * x[xo + i];
}

/** In-place log-softmax of logits[o..o+n) into out[o..); returns nothing. */
export function logSoftmax(logits: Float64Array, o: number, n: number, out: Float64Array, oo: number): void {
  let m = Number.NEGATIVE_INFINITY;
  for (let i = 0; i < n; i++) if (logits[o + i] > m) m = logits[o + i];
  let s = 0;
  for (let i = 0; i < n; i++) s += Math.exp(logits[o + i] - m);
  const lse = m + Math.log(s);
  for (let i = 0; i < n; i++) out[oo + i] = logits[o + i] - lse;
}

/** One attention head for query position t over keys 0..t; writes probs into p[po..po+t]. */
export function attendRow(
  q: Float64Array,
  qo: number,
  K: Float64Array,
  V: Float64Array,
  hOff: number,
  d: number,
  dh: number,
  t: number,
  scale: number,
  slope: number,
  p: Float64Array,
  po: number,
  out: Float64Array,
  oo: number,
) {
  let m = Number.NEGATIVE_INFINITY;
  for (let j = 0; j <= t; j++) {
    let s = 0;
    const ko = j * d + hOff;
    for (let e = 0; e < dh; e++) s += q[qo + e] * K[ko + e];
    s = s * scale - slope * (t - j);
    p[po + j] = s;
    if (s > m) m = s;
  }
  let z = 0;
  for (let j = 0; j <= t; j++) {
    const e = Math.exp(p[po + j] - m);
    p[po + j] = e;
    z += e;
  }
  for (let e = 0; e < dh; e++) out[oo + e] = 0;
  for (let j = 0; j <= t; j++) {
    const pj = p[po + j] / z;
    p[po + j] = pj;
    const vo = j * d + hOff;
    for (let e = 0; e < dh; e++) out[oo + e] += pj * V[vo + e];
  }
}
