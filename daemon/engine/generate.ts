// Sampling from the model's own distribution: temperature, min-p, top-k, top-p, stop strings, seeded per
// request. The logprob recorded for each sampled token is the model's raw log p (temperature 1, no
// truncation), as vLLM's default logprobs_mode raw_logprobs gives it (vllm/config/model.py:305).
import { cloneState, type DecodeState, type Model } from './model';
import { Rng } from './rng';
import { decode, END_ID } from './tokenizer';

export interface SamplingParams {
  n: number;
  maxTokens: number;
  temperature: number;
  topP: number;
  /** Keep the k most likely tokens (0: all). */
  topK: number;
  /** Drop tokens less likely than minP × the most likely one (0: none). */
  minP: number;
  seed: number | null;
  stop: string[];
  /** top logprobs to return per token (0 = none) */
  topLogprobs: number;
}

export interface TopLogprob {
  id: number;
  logprob: number;
}

export interface ChoiceState {
  index: number;
  rng: Rng;
  state: DecodeState;
  logp: Float64Array | null;
  tokens: number[];
  logprobs: number[];
  top: TopLogprob[][];
  text: string;
  /** characters of `text` already handed out (streaming) */
  emitted: number;
  finish: 'stop' | 'length' | null;
  stopReason: string | number | null;
}

let unseeded = 0x51ed;

/** Mix a request seed and a choice index into one 32-bit seed. */
export function choiceSeed(seed: number | null, index: number): number {
  if (seed === null) {
    unseeded = (unseeded + 0x9e3779b9) >>> 0;
    return (unseeded ^ Math.floor(Math.random() * 0x7fffffff)) >>> 0;
  }
  let h = (Math.floor(seed) ^ Math.imul(index + 1, 0x85ebca6b)) >>> 0;
  h = Math.imul(h ^ (h >>> 16), 0x7feb352d) >>> 0;
  h = Math.imul(h ^ (h >>> 15), 0x846ca68b) >>> 0;
  return (h ^ (h >>> 16)) >>> 0;
}

/** Zeroes the weights (max 1) that min-p and top-k drop, in vLLM's order (min-p, then top-k). */
function truncate(w: Float64Array, topK: number, minP: number): void {
  if (minP > 0) for (let j = 0; j < w.length; j++) if (w[j] < minP) w[j] = 0;
  if (topK > 0 && topK < w.length) {
    const kth = Float64Array.from(w).sort().reverse()[topK - 1];
    let kept = 0;
    for (let j = 0; j < w.length; j++) {
      if (w[j] > kth) kept++;
      else if (w[j] < kth) w[j] = 0;
    }
    // ties at the k-th weight: keep the first ones, k in all
    for (let j = 0; j < w.length; j++)
      if (w[j] === kth && w[j] > 0) {
        if (kept < topK) kept++;
        else w[j] = 0;
      }
  }
}

/** Draw a token id from log-probs with temperature, min-p, top-k and nucleus (top-p) filtering. */
export function sampleToken(
  logp: Float64Array,
  temperature: number,
  topP: number,
  rng: Rng,
  cut: { topK: number; minP: number } = { topK: 0, minP: 0 },
): number {
  const V = logp.length;
  if (temperature <= 0) {
    let best = 0;
    for (let j = 1; j < V; j++) if (logp[j] > logp[best]) best = j;
    return best;
  }
  const w = new Float64Array(V);
  let m = Number.NEGATIVE_INFINITY;
  for (let j = 0; j < V; j++) if (logp[j] / temperature > m) m = logp[j] / temperature;
  let z = 0;
  for (let j = 0; j < V; j++) {
    w[j] = Math.exp(logp[j] / temperature - m);
  }
  if (cut.topK > 0 || cut.minP > 0) truncate(w, cut.topK, cut.minP);
  for (let j = 0; j < V; j++) z += w[j];
  const u = rng.next();
  if (topP >= 1) {
    let acc = 0;
    const target = u * z;
    for (let j = 0; j < V; j++) {
      acc += w[j];
      if (acc > target) return j;
    }
    return V - 1;
  }
  const order = Array.from({ length: V }, (_, j) => j).sort((a, b) => w[b] - w[a] || a - b);
  let keep = 0;
  let mass = 0;
  while (keep < V) {
    mass += w[order[keep]];
    keep++;
    if (mass >= topP * z) break;
  }
  let acc = 0;
  const target = u * mass;
  for (let k = 0; k < keep; k++) {
    acc += w[order[k]];
    if (acc > target) return order[k];
  }
  return order[keep - 1];
}

function topOf(logp: Float64Array, k: number): TopLogprob[] {
  if (k <= 0) return [];
  const order = Array.from({ length: logp.length }, (_, j) => j).sort((a, b) => logp[b] - logp[a] || a - b);
  return order.slice(0, k).map((id) => ({ id, logprob: logp[id] }));
}

/** Run the prompt through the model once; every choice starts from a copy of this state. */
export function prefill(model: Model, prompt: number[]): { state: DecodeState; logp: Float64Array } {
  if (prompt.length === 0) throw new Error('empty prompt');
  const state = model.newState();
  let logp: Float64Array | null = null;
  for (let i = 0; i < prompt.length; i++) logp = model.step(state, prompt[i], i === prompt.length - 1);
  return { state, logp: logp! };
}

export function startChoices(
  model: Model,
  prompt: number[],
  params: SamplingParams,
  firstIndex = 0,
): ChoiceState[] {
  const { state, logp } = prefill(model, prompt);
  return Array.from({ length: params.n }, (_, i) => ({
    index: firstIndex + i,
    rng: new Rng(choiceSeed(params.seed, firstIndex + i)),
    state: i === params.n - 1 ? state : cloneState(state),
    logp,
    tokens: [],
    logprobs: [],
    top: [],
    text: '',
    emitted: 0,
    finish: null,
    stopReason: null,
  }));
}

/** Sample one more token for a choice (no-op when finished). */
export function advance(model: Model, c: ChoiceState, params: SamplingParams): void {
  if (c.finish || !c.logp) return;
  const tok = sampleToken(c.logp, params.temperature, params.topP, c.rng, params);
  c.tokens.push(tok);
  c.logprobs.push(c.logp[tok]);
  if (params.topLogprobs > 0) c.top.push(topOf(c.logp, params.topLogprobs));
  if (tok === END_ID) {
    c.finish = 'stop';
    c.logp = null;
    return;
  }
  const text = decode(c.tokens, true);
  for (const s of params.stop) {
    const at = s.length > 0 ? text.indexOf(s) : -1;
    if (at >= 0) {
      c.text = text.slice(0, at);
      c.finish = 'stop';
      c.stopReason = s;
      c.logp = null;
      return;
    }
  }
  c.text = text;
  if (c.tokens.length >= params.maxTokens || c.state.pos >= model.config.maxLen) {
    c.finish = 'length';
    c.logp = null;
    return;
  }
  c.logp = model.step(c.state, tok, true);
}

/** The text of a choice that is safe to hand out now (holds back a possible stop-string prefix). */
export function takeDelta(c: ChoiceState, params: SamplingParams): string {
  let end = c.text.length;
  if (!c.finish) {
    const hold = params.stop.reduce((m, s) => Math.max(m, s.length - 1), 0);
    end = Math.max(c.emitted, end - hold);
    while (end > c.emitted && c.text.charCodeAt(end - 1) === 0xfffd) end--;
  }
  const delta = c.text.slice(c.emitted, end);
  c.emitted = end;
  return delta;
}
