// buildSamples: trajectories (token arrays per call) → training samples with loss masks, advantages and
// loss weights. Two passes: the first plans every sample (call range, exact length, mask-1 count) without
// touching tokens beyond the prefix checks; the second allocates each sample's typed arrays at their exact
// size (zeroed by the allocator) and fills the non-zero parts with TypedArray.set / fill. No per-token
// objects, no concatenation.
import type { AdvantageEstimator, LossAggregation, MergeMode } from '../protocol/algorithm';
import type { BridgeRecord, CallExclusion, PrefixBreak, RolloutStats } from '../protocol/entities';
import type { SamplesSummary } from '../protocol/samples';
import type { Sample } from '../protocol/training';
import { advantageEstimators, isZeroVariance } from './advantages';
import { lossAggregations } from './aggregation';
import { copyInto, mergeModes } from './merge';
import { type DiagnoseOptions, diagnosePrefixBreak } from './prefix';

export interface TrajectoryCallArrays {
  prompt_ids: ArrayLike<number>;
  response_ids: ArrayLike<number>;
  response_logprobs: ArrayLike<number> | null;
  /** The proxy's bridge decision for the call: a prefix break there names its fallback and history change. */
  bridge?: BridgeRecord | null;
  /** The temperature the call sampled at (LlmCall.sampling); null or absent: not known. */
  temperature?: number | null;
  /**
   * The request fields that constrained its decoding (LlmCall.sampling.constrained): its logprobs are
   * not the policy's, so its response tokens are context (mask 0), counted as excluded "constrained".
   */
  constrained?: readonly string[] | null;
}

/** Calls of a rollout left out of its trajectory, by reason (only reasons that occurred). */
export type ExcludedCalls = Partial<Record<CallExclusion, number>>;

export interface TrajectoryArrays {
  rollout_id: string;
  group_id: string;
  reward: number | null;
  calls: TrajectoryCallArrays[];
  /** Its stored calls that were left out (trajectoryFromCalls), by reason. */
  excluded_calls?: ExcludedCalls;
}

export interface BuildOptions {
  merge: MergeMode;
  advantage: AdvantageEstimator;
  loss_agg: LossAggregation;
  /** The constant of seq-mean-token-sum-norm (required there, ignored otherwise). */
  max_len?: number;
  /** A sample whose prompt (the tokens before its first response token) is longer is dropped. */
  max_prompt_tokens?: number;
  /** A sample's tokens after its prompt are cut to this many. */
  max_response_tokens?: number;
  /** Leave out groups whose rewards are all equal (their advantages would be 0). */
  drop_zero_variance_groups?: boolean;
  decode?: (ids: number[]) => string;
  templateTokenIds?: ReadonlySet<number>;
}

/** A built sample also carries its rollout's advantage at full precision (the arrays hold float32). */
export interface BuiltSample extends Sample {
  advantage: number;
}

export interface BuildSummary extends SamplesSummary {
  /** Groups (with at least one rewarded rollout) whose rewards are all equal. */
  zero_variance_groups: number;
  /** Of those, how many were left out by drop_zero_variance_groups. */
  dropped_groups: number;
  /** Samples whose response part was cut to max_response_tokens. */
  truncated: number;
  /** Samples dropped because their prompt exceeded max_prompt_tokens. */
  dropped_prompts: number;
  /** All tokens of all samples (mask 0 and 1). */
  tokens: number;
  /**
   * Merges broken because the next call sampled at another temperature (its prompt did extend the
   * sequence): one sample has one temperature, the one its trainer divides the logits by.
   */
  temperature_breaks: number;
  /**
   * Calls of the rollouts left out of their trajectories, by reason (only reasons that occurred), and
   * `constrained` calls, whose tokens stay in as context but out of the loss.
   */
  excluded_calls: ExcludedCalls;
}

export interface BuildResult {
  samples: BuiltSample[];
  summary: BuildSummary;
  /** Every input rollout's merge, whether or not its reward let it into the batch. */
  rollouts: Map<string, { stats: RolloutStats; prefix_breaks: PrefixBreak[] }>;
}

/** One planned sample: calls [first, end) of trajectory `t`, cut to `len` tokens. */
interface Plan {
  t: number;
  first: number;
  end: number;
  len: number;
  mask: number;
}

/** Per-rollout advantages and which rollouts enter the batch. */
function advantagesOf(
  trajectories: TrajectoryArrays[],
  options: BuildOptions,
): { adv: Float64Array; included: Uint8Array; zeroVariance: number; droppedGroups: number } {
  const estimator = advantageEstimators[options.advantage];
  if (!estimator) throw new RangeError(`unknown advantage estimator: ${String(options.advantage)}`);
  const groups = new Map<string, number[]>();
  trajectories.forEach((tr, i) => {
    if (tr.reward === null) return;
    const members = groups.get(tr.group_id);
    if (members) members.push(i);
    else groups.set(tr.group_id, [i]);
  });
  const adv = new Float64Array(trajectories.length);
  const included = new Uint8Array(trajectories.length);
  let zeroVariance = 0;
  let droppedGroups = 0;
  for (const members of groups.values()) {
    const rewards = Float64Array.from(members, (i) => trajectories[i].reward as number);
    const zero = isZeroVariance(rewards);
    if (zero) zeroVariance++;
    if (zero && options.drop_zero_variance_groups) {
      droppedGroups++;
      continue;
    }
    const a = estimator(rewards);
    members.forEach((i, k) => {
      adv[i] = a[k];
      included[i] = 1;
    });
  }
  return { adv, included, zeroVariance, droppedGroups };
}

const lengthOf = (c: TrajectoryCallArrays): number => c.prompt_ids.length + c.response_ids.length;
const temperatureOf = (c: TrajectoryCallArrays): number | null => c.temperature ?? null;
const isConstrained = (c: TrajectoryCallArrays): boolean => (c.constrained?.length ?? 0) > 0;

/** Pass 1's output: the batch's samples planned, every rollout's merge, and the batch's counters. */
interface Planned {
  plans: Plan[];
  rollouts: BuildResult['rollouts'];
  prefixBreaks: number;
  truncated: number;
  droppedPrompts: number;
  temperatureBreaks: number;
}

/** Pass 1: plans the samples of every trajectory (call ranges, lengths and mask counts only). */
function planSamples(trajectories: TrajectoryArrays[], options: BuildOptions, included: Uint8Array): Planned {
  const continues = mergeModes[options.merge];
  const maxPrompt = options.max_prompt_tokens ?? Number.POSITIVE_INFINITY;
  const maxResponse = options.max_response_tokens ?? Number.POSITIVE_INFINITY;
  const diag: DiagnoseOptions = { decode: options.decode, templateTokenIds: options.templateTokenIds };
  const out: Planned = {
    plans: [],
    rollouts: new Map(),
    prefixBreaks: 0,
    truncated: 0,
    droppedPrompts: 0,
    temperatureBreaks: 0,
  };
  for (let t = 0; t < trajectories.length; t++) {
    const calls = trajectories[t].calls;
    const stats: RolloutStats = { samples: 0, prefix_breaks: 0, mask_tokens: 0, truncations: 0 };
    const breaks: PrefixBreak[] = [];
    const plan = (first: number, end: number): void => {
      const promptLen = calls[first].prompt_ids.length;
      if (promptLen > maxPrompt) {
        if (included[t]) out.droppedPrompts++;
        return;
      }
      const full = lengthOf(calls[end - 1]);
      const len = Math.min(full, promptLen + maxResponse);
      let mask = 0;
      for (let j = first; j < end; j++) {
        const start = calls[j].prompt_ids.length;
        if (start >= len) break;
        if (isConstrained(calls[j])) continue;
        mask += Math.min(start + calls[j].response_ids.length, len) - start;
      }
      stats.samples++;
      stats.mask_tokens += mask;
      if (len < full) stats.truncations++;
      if (!included[t]) return;
      if (len < full) out.truncated++;
      out.plans.push({ t, first, end, len, mask });
    };
    let first = 0;
    for (let k = 1; k < calls.length; k++) {
      const prev = calls[k - 1];
      if (continues(prev.prompt_ids, prev.response_ids, calls[k].prompt_ids)) {
        if (temperatureOf(prev) === temperatureOf(calls[k])) continue;
        plan(first, k);
        first = k;
        if (included[t]) out.temperatureBreaks++;
        continue;
      }
      plan(first, k);
      first = k;
      if (options.merge === 'exact') {
        const cause = calls[k].bridge;
        breaks.push({
          ...diagnosePrefixBreak(k, prev.prompt_ids, prev.response_ids, calls[k].prompt_ids, diag),
          ...(cause ? { bridge_fallback: cause.fallback ?? null, change: cause.change ?? null } : {}),
        });
      }
    }
    if (calls.length > 0) plan(first, calls.length);
    stats.prefix_breaks = breaks.length;
    if (included[t]) out.prefixBreaks += breaks.length;
    out.rollouts.set(trajectories[t].rollout_id, { stats, prefix_breaks: breaks });
  }
  return out;
}

/** Pass 2, one sample: its typed arrays allocated at their exact size, the non-zero parts filled. */
function fillSample(tr: TrajectoryArrays, plan: Plan, advantage: number, weight: number, index: number) {
  const { first, end, len } = plan;
  const ids = new Int32Array(len);
  const mask = new Uint8Array(len);
  const advantages = new Float32Array(len);
  const oldLogprobs = new Float64Array(len);
  const lossWeights = new Float64Array(len);
  let pos = 0;
  for (let j = first; j < end && pos < len; j++) {
    const c = tr.calls[j];
    const pEnd = Math.min(c.prompt_ids.length, len);
    if (pEnd > pos) {
      copyInto(ids, pos, c.prompt_ids, pos, pEnd - pos);
      oldLogprobs.fill(Number.NaN, pos, pEnd);
    }
    const rStart = c.prompt_ids.length;
    const rEnd = Math.min(rStart + c.response_ids.length, len);
    if (rEnd > rStart && isConstrained(c)) {
      copyInto(ids, rStart, c.response_ids, 0, rEnd - rStart);
      oldLogprobs.fill(Number.NaN, rStart, rEnd);
    } else if (rEnd > rStart) {
      const n = rEnd - rStart;
      copyInto(ids, rStart, c.response_ids, 0, n);
      mask.fill(1, rStart, rEnd);
      if (advantage !== 0) advantages.fill(advantage, rStart, rEnd);
      if (weight !== 0) lossWeights.fill(weight, rStart, rEnd);
      const lp = c.response_logprobs;
      if (lp && lp.length === c.response_ids.length) copyInto(oldLogprobs, rStart, lp, 0, n);
      else oldLogprobs.fill(Number.NaN, rStart, rEnd);
    }
    pos = rStart + c.response_ids.length;
  }
  const sample: BuiltSample = {
    rollout_id: tr.rollout_id,
    group_id: tr.group_id,
    index,
    input_ids: ids,
    loss_mask: mask,
    advantages,
    old_logprobs: oldLogprobs,
    loss_weights: lossWeights,
    advantage,
  };
  // Every call of a sample shares it (a change breaks the merge); unknown or greedy: absent (= 1).
  const temperature = temperatureOf(tr.calls[first]);
  if (temperature !== null && temperature > 0) sample.temperature = temperature;
  return sample;
}

/** Rollouts without a reward, and the calls kept out of the loss by why. */
function exclusionsOf(trajectories: TrajectoryArrays[]): { excluded: number; excludedCalls: ExcludedCalls } {
  let excluded = 0;
  const excludedCalls: ExcludedCalls = {};
  for (const tr of trajectories) {
    if (tr.reward === null) excluded++;
    const constrained = tr.calls.reduce((n, c) => n + (isConstrained(c) ? 1 : 0), 0);
    if (constrained > 0) excludedCalls.constrained = (excludedCalls.constrained ?? 0) + constrained;
    for (const [why, n] of Object.entries(tr.excluded_calls ?? {}) as [CallExclusion, number][])
      excludedCalls[why] = (excludedCalls[why] ?? 0) + n;
  }
  return { excluded, excludedCalls };
}

export function buildSamples(trajectories: TrajectoryArrays[], options: BuildOptions): BuildResult {
  if (!mergeModes[options.merge]) throw new RangeError(`unknown merge mode: ${String(options.merge)}`);
  const aggregate = lossAggregations[options.loss_agg];
  if (!aggregate) throw new RangeError(`unknown loss aggregation: ${String(options.loss_agg)}`);

  const { adv, included, zeroVariance, droppedGroups } = advantagesOf(trajectories, options);
  const planned = planSamples(trajectories, options, included);
  const { plans } = planned;

  // Loss weights need the whole batch: one weight per sample for its mask-1 tokens.
  const maskCounts = Int32Array.from(plans, (p) => p.mask);
  const weights = aggregate(maskCounts, options.max_len);

  const samples: BuiltSample[] = new Array(plans.length);
  let tokens = 0;
  let maskTokens = 0;
  let index = 0;
  for (let s = 0; s < plans.length; s++) {
    const t = plans[s].t;
    if (s === 0 || plans[s - 1].t !== t) index = 0;
    samples[s] = fillSample(trajectories[t], plans[s], adv[t], weights[s], index++);
    tokens += plans[s].len;
    maskTokens += plans[s].mask;
  }

  const { excluded, excludedCalls } = exclusionsOf(trajectories);
  return {
    samples,
    summary: {
      trajectories: trajectories.length,
      samples: samples.length,
      prefix_breaks: planned.prefixBreaks,
      excluded,
      mask_tokens: maskTokens,
      zero_variance_groups: zeroVariance,
      dropped_groups: droppedGroups,
      truncated: planned.truncated,
      dropped_prompts: planned.droppedPrompts,
      tokens,
      temperature_breaks: planned.temperatureBreaks,
      excluded_calls: excludedCalls,
    },
    rollouts: planned.rollouts,
  };
}
