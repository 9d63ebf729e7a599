// The samples stage: the one entry point the scheduler, the CLI (`samples`, `export`) and the trajectory
// view use to turn rollouts into training samples (shared/spec/samples.md).
import { AlgorithmConfig } from '../protocol/config';
import { BridgeRecord, type LlmCall, type PrefixBreak, type RolloutStats } from '../protocol/entities';
import { type Store, StoreError } from '../store/store';
import { type BuildOptions, buildSamples, type TrajectoryArrays } from './build';

export { ADV_EPS, advantageEstimators, isZeroVariance } from './advantages';
export { lossAggregations } from './aggregation';
export type {
  BuildOptions,
  BuildResult,
  BuildSummary,
  BuiltSample,
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
  bridge?: unknown;
  sampling?: { temperature: number | null } | null;
};

/**
 * A stored rollout's calls as a trajectory: failed and cancelled calls, calls without token ids and
 * recording side calls (tag "side": titles, token counts) are skipped, and of a call sampled with n > 1
 * (one record per choice, tagged "choice:<i>") only choice 0 continues the trajectory: the harness went on
 * from it, the other choices are siblings, not later turns. A rollout without a group is a group of its own.
 */
export function trajectoryFromCalls(
  rollout: { id: string; group_id: string | null; reward: number | null },
  calls: CallLike[],
): TrajectoryArrays {
  const out: TrajectoryArrays['calls'] = [];
  for (const c of calls) {
    if (c.status !== 'ok' || !c.prompt_ids || !c.response_ids) continue;
    if (c.tags?.some((tag) => tag === 'side' || (tag.startsWith('choice:') && tag !== 'choice:0'))) continue;
    const bridge = BridgeRecord.safeParse(c.bridge);
    out.push({
      prompt_ids: c.prompt_ids,
      response_ids: c.response_ids,
      response_logprobs: c.response_logprobs,
      bridge: bridge.success ? bridge.data : null,
      temperature: c.sampling?.temperature ?? null,
    });
  }
  return {
    rollout_id: rollout.id,
    group_id: rollout.group_id ?? rollout.id,
    reward: rollout.reward,
    calls: out,
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

/** The samples-stage options of a run's algorithm settings (merge, advantage, aggregation, limits). */
export function buildOptionsOf(
  algorithm: AlgorithmConfig,
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
    drop_zero_variance_groups: algorithm.drop_zero_variance_groups,
  };
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
