// A tiny causal transformer in plain TypeScript (Float64Array everywhere, manual backprop).
// Pre-norm blocks: x += Attn(RMSNorm(x)); x += MLP(RMSNorm(x)); learned token + position embeddings;
// untied output head with bias. Sampling (incremental, KV cache) and training (full sequence) share
// the same row kernels, so their logprobs agree to float64 rounding.
import { END_ID, VOCAB_SIZE } from './tokenizer';

export interface ModelConfig {
  vocab: number;
  dModel: number;
  nHeads: number;
  nLayers: number;
  dFf: number;
  maxLen: number;
  /** per-head ALiBi slopes (score −= slope·distance); recency bias that makes copying learnable fast */
  alibi: number[];
}

export const DEFAULT_MODEL_CONFIG: ModelConfig = {
  vocab: VOCAB_SIZE,
  dModel: 32,
  nHeads: 2,
  nLayers: 2,
  dFf: 64,
  maxLen: 512,
  alibi: [0.5, 0.03125],
};

const EPS = 1e-5;

interface LayerOffsets {
  g1: number;
  wq: number;
  wk: number;
  wv: number;
  wo: number;
  g2: number;
  w1: number;
  b1: number;
  w2: number;
  b2: number;
}

export interface Layout {
  tokEmb: number;
  posEmb: number;
  layers: LayerOffsets[];
  gf: number;
  wout: number;
  bout: number;
  total: number;
}

export function layoutOf(c: ModelConfig): Layout {
  let o = 0;
  const take = (n: number) => {
    const at = o;
    o += n;
    return at;
  };
  const d = c.dModel;
  const tokEmb = take(c.vocab * d);
  const posEmb = take(c.maxLen * d);
  const layers: LayerOffsets[] = [];
  for (let l = 0; l < c.nLayers; l++) {
    layers.push({
      g1: take(d),
      wq: take(d * d),
      wk: take(d * d),
      wv: take(d * d),
      wo: take(d * d),
      g2: take(d),
      w1: take(d * c.dFf),
      b1: take(c.dFf),
      w2: take(c.dFf * d),
      b2: take(d),
    });
  }
  const gf = take(d);
  const wout = take(d * c.vocab);
  const bout = take(c.vocab);
  return { tokEmb, posEmb, layers, gf, wout, bout, total: o };
}

/** A small deterministic PRNG (mulberry32 over a 32-bit state); next() in [0, 1). */
export class Rng {
  private s: number;
  constructor(seed: number) {
    this.s = (Math.floor(seed) ^ 0x9e3779b9) >>> 0;
    for (let i = 0; i < 4; i++) this.next();
  }
  next(): number {
    this.s = (this.s + 0x6d2b79f5) >>> 0;
    let t = this.s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  normal(): number {
    const u = Math.max(this.next(), 1e-12);
    return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * this.next());
  }
}

export function initParams(c: ModelConfig, seed: number): Float64Array {
  const L = layoutOf(c);
  const p = new Float64Array(L.total);
  const rng = new Rng(seed);
  const fill = (at: number, n: number, std: number) => {
    for (let i = 0; i < n; i++) p[at + i] = rng.normal() * std;
  };
  const ones = (at: number, n: number) => p.fill(1, at, at + n);
  const d = c.dModel;
  fill(L.tokEmb, c.vocab * d, 1);
  fill(L.posEmb, c.maxLen * d, 0.5);
  const resid = 1 / Math.sqrt(2 * c.nLayers);
  for (const l of L.layers) {
    ones(l.g1, d);
    fill(l.wq, d * d, 1 / Math.sqrt(d));
    fill(l.wk, d * d, 1 / Math.sqrt(d));
    fill(l.wv, d * d, 1 / Math.sqrt(d));
    fill(l.wo, d * d, resid / Math.sqrt(d));
    ones(l.g2, d);
    fill(l.w1, d * c.dFf, 1 / Math.sqrt(d));
    fill(l.w2, c.dFf * d, resid / Math.sqrt(c.dFf));
  }
  ones(L.gf, d);
  fill(L.wout, d * c.vocab, 0.5 / Math.sqrt(d));
  // A text-like prior: the untrained model babbles printable ASCII (and may end its turn);
  // control bytes, non-ASCII bytes and role markers start 3 nats less likely, <|end|> 2 nats more.
  for (let j = 0; j < c.vocab; j++) {
    const printable = j >= 32 && j < 127;
    p[L.bout + j] = j === END_ID ? 2 : printable ? 0 : -3;
  }
  return p;
}

// ---- row kernels (shared by the sequence and the incremental paths) ----

/** y[yo + j] (+)= Σ_i x[xo + i] · W[wo + i·out + j] */
function matvec(
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
function matvecBack(
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
function rmsnorm(
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

function rmsnormBack(
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
function attendRow(
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

// ---- the model ----

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

export class Model {
  readonly layout: Layout;
  params: Float64Array;
  constructor(
    readonly config: ModelConfig,
    params?: Float64Array,
  ) {
    this.layout = layoutOf(config);
    this.params = params ?? new Float64Array(this.layout.total);
    if (this.params.length !== this.layout.total) throw new Error('parameter count does not match config');
  }

  /**
   * Full-sequence forward. `positions`: which positions t need the next-token distribution
   * (log p(· | tokens[0..t])); the head runs only there. `temperature` divides the logits before the
   * log-softmax (a sample's sampling temperature, spec/samples.md).
   */
  forward(tokens: ArrayLike<number>, positions: number[], temperature = 1): SeqForward {
    if (!(temperature > 0)) throw new Error(`temperature ${temperature} must be positive`);
    const c = this.config;
    const P = this.params;
    const L = this.layout;
    const T = tokens.length;
    if (T > c.maxLen) throw new Error(`sequence of ${T} tokens exceeds max_model_len ${c.maxLen}`);
    const d = c.dModel;
    const f = c.dFf;
    const H = c.nHeads;
    const dh = d / H;
    const scale = 1 / Math.sqrt(dh);
    let x = new Float64Array(T * d);
    for (let t = 0; t < T; t++) {
      const e = L.tokEmb + tokens[t] * d;
      const pe = L.posEmb + t * d;
      for (let i = 0; i < d; i++) x[t * d + i] = P[e + i] + P[pe + i];
    }
    const caches: LayerCache[] = [];
    for (const lo of L.layers) {
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
          attendRow(
            lc.q,
            t * d + hh * dh,
            lc.k,
            lc.v,
            hh * dh,
            d,
            dh,
            t,
            scale,
            c.alibi[hh] ?? 0,
            lc.att,
            (hh * T + t) * T,
            lc.a,
            t * d + hh * dh,
          );
        }
        for (let i = 0; i < d; i++) lc.x2[t * d + i] = x[t * d + i];
        matvec(lc.a, t * d, P, lo.wo, d, d, lc.x2, t * d, true);
        lc.r2[t] = rmsnorm(lc.x2, t * d, P, lo.g2, d, lc.n2, t * d);
        for (let j = 0; j < f; j++) lc.u[t * f + j] = P[lo.b1 + j];
        matvec(lc.n2, t * d, P, lo.w1, d, f, lc.u, t * f, true);
        for (let j = 0; j < f; j++) lc.h[t * f + j] = Math.max(lc.u[t * f + j], 0);
      }
      const xo = new Float64Array(T * d);
      for (let t = 0; t < T; t++) {
        for (let i = 0; i < d; i++) xo[t * d + i] = lc.x2[t * d + i] + P[lo.b2 + i];
        matvec(lc.h, t * f, P, lo.w2, f, d, xo, t * d, true);
      }
      caches.push(lc);
      x = xo;
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

  /** Backward from dlogp (d loss / d log-softmax outputs, positions.length × V); accumulates into grad. */
  backward(fw: SeqForward, dlogp: Float64Array, grad: Float64Array): void {
    const c = this.config;
    const P = this.params;
    const L = this.layout;
    const { T, tokens } = fw;
    const d = c.dModel;
    const f = c.dFf;
    const H = c.nHeads;
    const dh = d / H;
    const scale = 1 / Math.sqrt(dh);
    const V = c.vocab;
    const dnf = new Float64Array(T * d);
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
    let dx = new Float64Array(T * d);
    for (let t = 0; t < T; t++) rmsnormBack(fw.xf, t * d, fw.rf[t], P, grad, L.gf, d, dnf, t * d, dx, t * d);

    for (let li = L.layers.length - 1; li >= 0; li--) {
      const lo = L.layers[li];
      const lc = fw.layers[li];
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
      const dn1 = new Float64Array(T * d);
      const ndx = new Float64Array(dx2);
      for (let t = 0; t < T; t++) {
        matvecBack(lc.n1, t * d, P, grad, lo.wq, d, d, dq, t * d, dn1, t * d);
        matvecBack(lc.n1, t * d, P, grad, lo.wk, d, d, dk, t * d, dn1, t * d);
        matvecBack(lc.n1, t * d, P, grad, lo.wv, d, d, dv, t * d, dn1, t * d);
        rmsnormBack(lc.xin, t * d, lc.r1[t], P, grad, lo.g1, d, dn1, t * d, ndx, t * d);
      }
      dx = ndx;
    }
    for (let t = 0; t < T; t++) {
      const e = L.tokEmb + tokens[t] * d;
      const pe = L.posEmb + t * d;
      for (let i = 0; i < d; i++) {
        grad[e + i] += dx[t * d + i];
        grad[pe + i] += dx[t * d + i];
      }
    }
  }

  newState(): DecodeState {
    const c = this.config;
    const d = c.dModel;
    return {
      pos: 0,
      K: Array.from({ length: c.nLayers }, () => new Float64Array(c.maxLen * d)),
      V: Array.from({ length: c.nLayers }, () => new Float64Array(c.maxLen * d)),
    };
  }

  /** Incremental forward of one token at state.pos; returns log p(· | prefix) (length V) when wanted. */
  step(state: DecodeState, token: number, wantLogp: boolean): Float64Array | null {
    const c = this.config;
    const P = this.params;
    const L = this.layout;
    const d = c.dModel;
    const f = c.dFf;
    const H = c.nHeads;
    const dh = d / H;
    const scale = 1 / Math.sqrt(dh);
    const t = state.pos;
    if (t >= c.maxLen) throw new Error('context full');
    const x = new Float64Array(d);
    const e = L.tokEmb + token * d;
    const pe = L.posEmb + t * d;
    for (let i = 0; i < d; i++) x[i] = P[e + i] + P[pe + i];
    const n = new Float64Array(d);
    const q = new Float64Array(d);
    const a = new Float64Array(d);
    const p = new Float64Array(t + 1);
    const u = new Float64Array(f);
    const x2 = new Float64Array(d);
    for (let li = 0; li < L.layers.length; li++) {
      const lo = L.layers[li];
      const K = state.K[li];
      const Vc = state.V[li];
      rmsnorm(x, 0, P, lo.g1, d, n, 0);
      matvec(n, 0, P, lo.wq, d, d, q, 0, false);
      matvec(n, 0, P, lo.wk, d, d, K, t * d, false);
      matvec(n, 0, P, lo.wv, d, d, Vc, t * d, false);
      for (let hh = 0; hh < H; hh++)
        attendRow(q, hh * dh, K, Vc, hh * dh, d, dh, t, scale, c.alibi[hh] ?? 0, p, 0, a, hh * dh);
      for (let i = 0; i < d; i++) x2[i] = x[i];
      matvec(a, 0, P, lo.wo, d, d, x2, 0, true);
      rmsnorm(x2, 0, P, lo.g2, d, n, 0);
      for (let j = 0; j < f; j++) u[j] = P[lo.b1 + j];
      matvec(n, 0, P, lo.w1, d, f, u, 0, true);
      for (let j = 0; j < f; j++) if (u[j] < 0) u[j] = 0;
      for (let i = 0; i < d; i++) x[i] = x2[i] + P[lo.b2 + i];
      matvec(u, 0, P, lo.w2, f, d, x, 0, true);
    }
    state.pos = t + 1;
    if (!wantLogp) return null;
    rmsnorm(x, 0, P, L.gf, d, n, 0);
    const V = c.vocab;
    const out = new Float64Array(V);
    for (let j = 0; j < V; j++) out[j] = P[L.bout + j];
    matvec(n, 0, P, L.wout, d, V, out, 0, true);
    logSoftmax(out, 0, V, out, 0);
    return out;
  }
}

export interface DecodeState {
  pos: number;
  K: Float64Array[];
  V: Float64Array[];
}

export function cloneState(s: DecodeState): DecodeState {
  return { pos: s.pos, K: s.K.map((k) => new Float64Array(k)), V: s.V.map((v) => new Float64Array(v)) };
}
