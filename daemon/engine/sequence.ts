// The reference model over a whole sequence, as training needs it: the forward pass that keeps every
// activation (log-probs only at the positions asked for) and the manual backward pass from
// d loss / d log-probs into a gradient laid out like the parameters.
import { attendRow, logSoftmax, matvec, matvecBack, rmsnorm, rmsnormBack } from './kernels';
import type { LayerOffsets, Layout, ModelConfig } from './layout';

interface LayerCache {
  xin: Float64Array; // T×d, block input
  r1: Float64Array; // T
  n1: Float64Array; // T×d
  q: Float64Array;
  k: Float64Array;
  v: Float64Array;
  att: Float64Array; // H×T×T (row t uses 0..t)
  a: Float64Array; // T×d (concat heads, before Wo)
  x2: Float64Array; // T×d after attention residual
  r2: Float64Array;
  n2: Float64Array;
  u: Float64Array; // T×f pre-activation
  h: Float64Array; // T×f relu
}

export interface SeqForward {
  tokens: ArrayLike<number>;
  T: number;
  layers: LayerCache[];
  xf: Float64Array; // T×d final residual
  rf: Float64Array;
  nf: Float64Array;
  /** positions whose next-token distribution was computed */
  positions: number[];
  /** log-probs (positions.length × V) of logits / temperature */
  logp: Float64Array;
  temperature: number;
}

/** The parameters with the configuration and layout that place them. */
export interface Weights {
  c: ModelConfig;
  L: Layout;
  P: Float64Array;
}

/** Full-sequence forward; see Model.forward. */
export function seqForward(
  w: Weights,
  tokens: ArrayLike<number>,
  positions: number[],
  temperature: number,
): SeqForward {
  if (!(temperature > 0)) throw new Error(`temperature ${temperature} must be positive`);
  const { c, L, P } = w;
  const T = tokens.length;
  if (T > c.maxLen) throw new Error(`sequence of ${T} tokens exceeds max_model_len ${c.maxLen}`);
  const d = c.dModel;
  let x: Float64Array = new Float64Array(T * d);
  for (let t = 0; t < T; t++) {
    const e = L.tokEmb + tokens[t] * d;
    const pe = L.posEmb + t * d;
    for (let i = 0; i < d; i++) x[t * d + i] = P[e + i] + P[pe + i];
  }
  const caches: LayerCache[] = [];
  for (const lo of L.layers) {
    const { cache, out } = layerForward(w, lo, x, T);
    caches.push(cache);
    x = out;
  }
  const rf = new Float64Array(T);
  const nf = new Float64Array(T * d);
  for (let t = 0; t < T; t++) rf[t] = rmsnorm(x, t * d, P, L.gf, d, nf, t * d);
  const V = c.vocab;
  const logp = new Float64Array(positions.length * V);
  for (let k = 0; k < positions.length; k++) {
    const t = positions[k];
    for (let j = 0; j < V; j++) logp[k * V + j] = P[L.bout + j];
    matvec(nf, t * d, P, L.wout, d, V, logp, k * V, true);
    if (temperature !== 1) for (let j = 0; j < V; j++) logp[k * V + j] /= temperature;
    logSoftmax(logp, k * V, V, logp, k * V);
  }
  return { tokens, T, layers: caches, xf: x, rf, nf, positions, logp, temperature };
}

/** One pre-norm block over the sequence: x += Attn(RMSNorm(x)); x += MLP(RMSNorm(x)). */
function layerForward(
  w: Weights,
  lo: LayerOffsets,
  x: Float64Array,
  T: number,
): { cache: LayerCache; out: Float64Array } {
  const { c, P } = w;
  const d = c.dModel;
  const f = c.dFf;
  const H = c.nHeads;
  const dh = d / H;
  const scale = 1 / Math.sqrt(dh);
  const lc: LayerCache = {
    xin: x,
    r1: new Float64Array(T),
    n1: new Float64Array(T * d),
    q: new Float64Array(T * d),
    k: new Float64Array(T * d),
    v: new Float64Array(T * d),
    att: new Float64Array(H * T * T),
    a: new Float64Array(T * d),
    x2: new Float64Array(T * d),
    r2: new Float64Array(T),
    n2: new Float64Array(T * d),
    u: new Float64Array(T * f),
    h: new Float64Array(T * f),
  };
  for (let t = 0; t < T; t++) {
    lc.r1[t] = rmsnorm(x, t * d, P, lo.g1, d, lc.n1, t * d);
    matvec(lc.n1, t * d, P, lo.wq, d, d, lc.q, t * d, false);
    matvec(lc.n1, t * d, P, lo.wk, d, d, lc.k, t * d, false);
    matvec(lc.n1, t * d, P, lo.wv, d, d, lc.v, t * d, false);
  }
  for (let t = 0; t < T; t++) {
    for (let hh = 0; hh < H; hh++) {
      const qo = t * d + hh * dh;
      const po = (hh * T + t) * T;
      attendRow(lc.q, qo, lc.k, lc.v, hh * dh, d, dh, t, scale, c.alibi[hh] ?? 0, lc.att, po, lc.a, qo);
    }
    for (let i = 0; i < d; i++) lc.x2[t * d + i] = x[t * d + i];
    matvec(lc.a, t * d, P, lo.wo, d, d, lc.x2, t * d, true);
    lc.r2[t] = rmsnorm(lc.x2, t * d, P, lo.g2, d, lc.n2, t * d);
    for (let j = 0; j < f; j++) lc.u[t * f + j] = P[lo.b1 + j];
    matvec(lc.n2, t * d, P, lo.w1, d, f, lc.u, t * f, true);
    for (let j = 0; j < f; j++) lc.h[t * f + j] = Math.max(lc.u[t * f + j], 0);
  }
  const out = new Float64Array(T * d);
  for (let t = 0; t < T; t++) {
    for (let i = 0; i < d; i++) out[t * d + i] = lc.x2[t * d + i] + P[lo.b2 + i];
    matvec(lc.h, t * f, P, lo.w2, f, d, out, t * d, true);
  }
  return { cache: lc, out };
}

/** Backward from dlogp (d loss / d log-softmax outputs, positions.length × V); accumulates into grad. */
export function seqBackward(w: Weights, fw: SeqForward, dlogp: Float64Array, grad: Float64Array): void {
  const { c, L, P } = w;
  const { T, tokens } = fw;
  const d = c.dModel;
  const dnf = headBackward(w, fw, dlogp, grad);
  let dx: Float64Array = new Float64Array(T * d);
  for (let t = 0; t < T; t++) rmsnormBack(fw.xf, t * d, fw.rf[t], P, grad, L.gf, d, dnf, t * d, dx, t * d);
  for (let li = L.layers.length - 1; li >= 0; li--)
    dx = layerBackward(w, L.layers[li], fw.layers[li], T, dx, grad);
  for (let t = 0; t < T; t++) {
    const e = L.tokEmb + tokens[t] * d;
    const pe = L.posEmb + t * d;
    for (let i = 0; i < d; i++) {
      grad[e + i] += dx[t * d + i];
      grad[pe + i] += dx[t * d + i];
    }
  }
}

/** Through the log-softmax and the output head: d loss / d final-norm outputs (T×d). */
function headBackward(w: Weights, fw: SeqForward, dlogp: Float64Array, grad: Float64Array): Float64Array {
  const { c, L, P } = w;
  const d = c.dModel;
  const V = c.vocab;
  const dnf = new Float64Array(fw.T * d);
  const dlogits = new Float64Array(V);
  for (let k = 0; k < fw.positions.length; k++) {
    const t = fw.positions[k];
    // log-softmax backward: dz_j = dy_j − p_j Σ dy, then through z = logits / temperature
    let sum = 0;
    for (let j = 0; j < V; j++) sum += dlogp[k * V + j];
    if (sum === 0) {
      let any = false;
      for (let j = 0; j < V; j++) if (dlogp[k * V + j] !== 0) any = true;
      if (!any) continue;
    }
    for (let j = 0; j < V; j++) {
      const g = (dlogp[k * V + j] - Math.exp(fw.logp[k * V + j]) * sum) / fw.temperature;
      dlogits[j] = g;
      grad[L.bout + j] += g;
    }
    matvecBack(fw.nf, t * d, P, grad, L.wout, d, V, dlogits, 0, dnf, t * d);
  }
  return dnf;
}

/** One block backward: d loss / d its output (dx) → d loss / d its input; accumulates into grad. */
function layerBackward(
  w: Weights,
  lo: LayerOffsets,
  lc: LayerCache,
  T: number,
  dx: Float64Array,
  grad: Float64Array,
): Float64Array {
  const { c, P } = w;
  const d = c.dModel;
  const f = c.dFf;
  // MLP
  const dx2 = new Float64Array(dx);
  const dh_ = new Float64Array(f);
  const dn2 = new Float64Array(T * d);
  for (let t = 0; t < T; t++) {
    for (let i = 0; i < d; i++) grad[lo.b2 + i] += dx[t * d + i];
    dh_.fill(0);
    matvecBack(lc.h, t * f, P, grad, lo.w2, f, d, dx, t * d, dh_, 0);
    for (let j = 0; j < f; j++) {
      if (lc.u[t * f + j] <= 0) dh_[j] = 0;
      grad[lo.b1 + j] += dh_[j];
    }
    matvecBack(lc.n2, t * d, P, grad, lo.w1, d, f, dh_, 0, dn2, t * d);
    rmsnormBack(lc.x2, t * d, lc.r2[t], P, grad, lo.g2, d, dn2, t * d, dx2, t * d);
  }
  // attention
  const da = new Float64Array(T * d);
  for (let t = 0; t < T; t++) matvecBack(lc.a, t * d, P, grad, lo.wo, d, d, dx2, t * d, da, t * d);
  const { dq, dk, dv } = attentionBackward(c, lc, T, da);
  const dn1 = new Float64Array(T * d);
  const ndx = new Float64Array(dx2);
  for (let t = 0; t < T; t++) {
    matvecBack(lc.n1, t * d, P, grad, lo.wq, d, d, dq, t * d, dn1, t * d);
    matvecBack(lc.n1, t * d, P, grad, lo.wk, d, d, dk, t * d, dn1, t * d);
    matvecBack(lc.n1, t * d, P, grad, lo.wv, d, d, dv, t * d, dn1, t * d);
    rmsnormBack(lc.xin, t * d, lc.r1[t], P, grad, lo.g1, d, dn1, t * d, ndx, t * d);
  }
  return ndx;
}

/** Through the heads' softmax attention: d loss / d (concatenated heads) → d loss / d q, k, v. */
function attentionBackward(c: ModelConfig, lc: LayerCache, T: number, da: Float64Array) {
  const d = c.dModel;
  const H = c.nHeads;
  const dh = d / H;
  const scale = 1 / Math.sqrt(dh);
  const dq = new Float64Array(T * d);
  const dk = new Float64Array(T * d);
  const dv = new Float64Array(T * d);
  const dp = new Float64Array(T);
  for (let hh = 0; hh < H; hh++) {
    const ho = hh * dh;
    for (let t = 0; t < T; t++) {
      const po = (hh * T + t) * T;
      let s = 0;
      for (let j = 0; j <= t; j++) {
        let g = 0;
        const vo = j * d + ho;
        for (let e = 0; e < dh; e++) {
          g += da[t * d + ho + e] * lc.v[vo + e];
          dv[vo + e] += lc.att[po + j] * da[t * d + ho + e];
        }
        dp[j] = g;
        s += lc.att[po + j] * g;
      }
      for (let j = 0; j <= t; j++) {
        const ds = lc.att[po + j] * (dp[j] - s) * scale;
        if (ds === 0) continue;
        const ko = j * d + ho;
        for (let e = 0; e < dh; e++) {
          dq[t * d + ho + e] += ds * lc.k[ko + e];
          dk[ko + e] += ds * lc.q[t * d + ho + e];
        }
      }
    }
  }
  return { dq, dk, dv };
}
