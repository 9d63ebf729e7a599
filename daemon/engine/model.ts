// A tiny causal transformer in plain TypeScript (Float64Array everywhere, manual backprop).
// Pre-norm blocks: x += Attn(RMSNorm(x)); x += MLP(RMSNorm(x)); learned token + position embeddings;
// untied output head with bias. Sampling (incremental, KV cache) and training (full sequence) share
// the same row kernels, so their logprobs agree to float64 rounding.
import { attendRow, logSoftmax, matvec, rmsnorm } from './kernels';
import { type Layout, layoutOf, type ModelConfig } from './layout';
import { type SeqForward, seqBackward, seqForward } from './sequence';

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
    return seqForward({ c: this.config, L: this.layout, P: this.params }, tokens, positions, temperature);
  }

  /** Backward from dlogp (d loss / d log-softmax outputs, positions.length × V); accumulates into grad. */
  backward(fw: SeqForward, dlogp: Float64Array, grad: Float64Array): void {
    seqBackward({ c: this.config, L: this.layout, P: this.params }, fw, dlogp, grad);
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
