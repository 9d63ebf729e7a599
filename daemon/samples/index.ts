// The samples stage: the one entry point the scheduler, the CLI (`samples`, `export`) and the trajectory
// view use to turn rollouts into training samples (shared/spec/samples.md).
import { AlgorithmConfig } from '../protocol/algorithm';
import {
  BridgeRecord,
  type CallExclusion,
  type LlmCall,
  type PrefixBreak,
  type RolloutStats,
} from '../protocol/entities';
import { type Store, StoreError } from '../store/store';
import { type BuildOptions, buildSamples, type ExcludedCalls, type TrajectoryArrays } from './build';

export { ADV_EPS, advantageEstimators, isZeroVariance } from './advantages';
export { lossAggregations } from './aggregation';
export type {
  BuildOptions,
  BuildResult,
  BuildSummary,
  BuiltSample,
  ExcludedCalls,
  TrajectoryArrays,
  TrajectoryCallArrays,
} from './build';
export { buildSamples } from './build';
export {
  formatLineError,
  type LineError,
  parseTrajectories,
  parseTrajectoryLine,
  toSampleJson,
  trajectoryArrays,
} from './jsonl';
export * from './loss';
export { mergeModes } from './merge';
export { BREAK_WINDOW, classifyBreak, diagnosePrefixBreak } from './prefix';

type CallLike = Pick<LlmCall, 'prompt_ids' | 'response_ids' | 'response_logprobs' | 'status'> & {
  tags?: readonly string[];
  token_source?: string;
  bridge?: unknown;
  sampling?: { temperature: number | null; constrained?: string[] } | null;
};

/**
 * Why a call is left out of its rollout's trajectory (null: it is in). An imported call (token_source
 * "import": a past session's text that the model never sampled) is left out unless `imported` is set:
 * it may be trained on as SFT-style data or evaluated, never silently as an on-policy sample.
 */
export function callExclusion(c: CallLike, options: { imported?: boolean } = {}): CallExclusion | null {
  if (c.status !== 'ok') return c.status as CallExclusion;
  if (!c.prompt_ids || !c.response_ids?.length) return 'text_only';
  if (c.token_source === 'import' && !options.imported) return 'imported';
  return null;
}

/**
 * A stored rollout's calls as a trajectory. Left out, and counted by reason (callExclusion): failed and
 * cancelled calls, answers that cannot be trained on (no choices, no token ids, logprobs that do not
 * pair with the ids) and text-only calls. Left out uncounted: recording side calls (tag "side": titles,
 * token counts) and, of a call sampled with n > 1 (one record per choice, tagged "choice:<i>"), the
 * choices after 0: the harness went on from choice 0, the others are siblings, not later turns. A
 * rollout without a group is a group of its own. Imported calls only with `imported` (callExclusion).
 */
export function trajectoryFromCalls(
  rollout: { id: string; group_id: string | null; reward: number | null },
  calls: CallLike[],
  options: { imported?: boolean } = {},
): TrajectoryArrays {
  const out: TrajectoryArrays['calls'] = [];
  const excluded: ExcludedCalls = {};
  for (const c of calls) {
    if (c.tags?.some((tag) => tag === 'side' || (tag.startsWith('choice:') && tag !== 'choice:0'))) continue;
    const why = callExclusion(c, options);
    if (why !== null) {
      excluded[why] = (excluded[why] ?? 0) + 1;
      continue;
    }
    if (!c.prompt_ids || !c.response_ids) continue;
    const bridge = BridgeRecord.safeParse(c.bridge);
    out.push({
      prompt_ids: c.prompt_ids,
      response_ids: c.response_ids,
      response_logprobs: c.response_logprobs,
      bridge: bridge.success ? bridge.data : null,
      temperature: c.sampling?.temperature ?? null,
      ...(c.sampling?.constrained?.length ? { constrained: c.sampling.constrained } : {}),
    });
  }
  return {
    rollout_id: rollout.id,
    group_id: rollout.group_id ?? rollout.id,
    reward: rollout.reward,
    calls: out,
    excluded_calls: excluded,
  };
}

/**
 * The trajectories of stored rollouts, in the given order, each from its calls in the store
 * (trajectoryFromCalls). `onCalls` sees every rollout's calls as they are read (e.g. to count tokens).
 */
export async function trajectoriesFromStore(
  store: Pick<Store, 'listLlmCalls'>,
  rollouts: Iterable<{ id: string; group_id: string | null; reward: number | null }>,
  onCalls?: (calls: LlmCall[]) => void,
): Promise<TrajectoryArrays[]> {
  const out: TrajectoryArrays[] = [];
  for (const rollout of rollouts) {
    const calls = await store.listLlmCalls(rollout.id);
    onCalls?.(calls);
    out.push(trajectoryFromCalls(rollout, calls));
  }
  return out;
}

/**
 * A step's calls left out of its samples: `excluded_calls` in all, and `excluded_calls.<reason>` for each
 * reason that occurred (CallExclusion: no_choices, no_token_ids, logprobs_mismatch, error, cancelled,
 * text_only, imported; constrained: in the samples as context, out of the loss).
 */
export function excludedCallMetrics(excluded: ExcludedCalls): Record<string, number> {
  const out: Record<string, number> = { excluded_calls: 0 };
  for (const [why, n] of Object.entries(excluded)) {
    out.excluded_calls += n ?? 0;
    out[`excluded_calls.${why}`] = n ?? 0;
  }
  return out;
}

/**
 * The samples-stage options of a run's algorithm settings (merge, advantage, aggregation, limits);
 * `dropZeroVariance`: drop zero-variance groups whatever the algorithm says (schedule.dynamic_sampling).
 */
export function buildOptionsOf(
  algorithm: AlgorithmConfig,
  dropZeroVariance = false,
): Pick<
  BuildOptions,
  | 'merge'
  | 'advantage'
  | 'loss_agg'
  | 'max_len'
  | 'max_prompt_tokens'
  | 'max_response_tokens'
  | 'drop_zero_variance_groups'
> {
  return {
    merge: algorithm.merge,
    advantage: algorithm.advantage,
    loss_agg: algorithm.loss_agg,
    max_len: algorithm.max_len,
    max_prompt_tokens: algorithm.max_prompt_tokens,
    max_response_tokens: algorithm.max_response_tokens,
    drop_zero_variance_groups: algorithm.drop_zero_variance_groups || dropZeroVariance,
  };
}

/**
 * The samples-stage options of a run's stored config: its algorithm's (buildOptionsOf), zero-variance
 * groups dropped also when its schedule has dynamic_sampling (which implies it).
 */
export function runBuildOptions(config: unknown): ReturnType<typeof buildOptionsOf> {
  const schedule = (config as { schedule?: { dynamic_sampling?: unknown } } | null)?.schedule;
  return buildOptionsOf(algorithmOf(config), schedule?.dynamic_sampling != null);
}

/** The algorithm settings of a run's stored config (defaults where absent or invalid). */
export function algorithmOf(config: unknown): AlgorithmConfig {
  const raw = (config as { algorithm?: unknown } | null)?.algorithm ?? {};
  const parsed = AlgorithmConfig.safeParse(raw);
  return parsed.success ? parsed.data : AlgorithmConfig.parse({});
}

/**
 * Merge one rollout's calls as its run would (merge mode and length limits from the run config; exact
 * merging for standalone rollouts and recordings), store the stats and prefix breaks, and return them.
 */
export async function analyzeRollout(
  store: Store,
  rolloutId: string,
  options: Pick<BuildOptions, 'decode' | 'templateTokenIds'> = {},
): Promise<{ stats: RolloutStats; prefix_breaks: PrefixBreak[] }> {
  const rollout = await store.getRollout(rolloutId);
  if (!rollout) throw new StoreError('not_found', `rollout ${rolloutId} not found`, 'rollout_id');
  const run = rollout.run_id ? await store.getRun(rollout.run_id) : null;
  const algo = run ? algorithmOf(run.config) : null;
  const calls = await store.listLlmCalls(rolloutId);
  const built = buildSamples([trajectoryFromCalls(rollout, calls)], {
    merge: algo?.merge ?? 'exact',
    advantage: 'grpo',
    loss_agg: 'token-mean',
    max_prompt_tokens: algo?.max_prompt_tokens,
    max_response_tokens: algo?.max_response_tokens,
    ...options,
  });
  const result = built.rollouts.get(rolloutId)!;
  await store.setRolloutStats(rolloutId, result.stats, result.prefix_breaks);
  return result;
}
