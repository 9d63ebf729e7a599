// The reference model's configuration, where each parameter lives in its one flat Float64Array, and
// the seeded initialization (with a text-like prior on the output bias).
import { Rng } from './rng';
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

export interface LayerOffsets {
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
