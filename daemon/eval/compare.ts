// Two evaluations side by side, task by task: the paired per-task differences of mean reward (b − a),
// a paired bootstrap interval of their mean (seeded) and an exact sign test, and tokens per task.
import type { Comparison, Evaluation } from '../protocol/evaluation';
import { bootstrapMean, mean, signTest } from './stats';

const nullIfNaN = (x: number): number | null => (Number.isNaN(x) ? null : x);

export function compareEvaluations(
  a: Pick<Evaluation, 'id' | 'tasks'>,
  b: Pick<Evaluation, 'id' | 'tasks'>,
  seed = 0,
): Comparison {
  const bTasks = new Map((b.tasks ?? []).map((t) => [t.key, t]));
  const per_task: Comparison['per_task'] = [];
  for (const ta of a.tasks ?? []) {
    const tb = bTasks.get(ta.key);
    if (!tb || ta.mean_reward === null || tb.mean_reward === null) continue;
    per_task.push({
      key: ta.key,
      a: ta.mean_reward,
      b: tb.mean_reward,
      diff: tb.mean_reward - ta.mean_reward,
      a_tokens: ta.prompt_tokens + ta.completion_tokens,
      b_tokens: tb.prompt_tokens + tb.completion_tokens,
    });
  }
  const diffs = per_task.map((t) => t.diff);
  const interval = bootstrapMean(diffs, seed, 10_000);
  const aTokens = mean(per_task.map((t) => t.a_tokens));
  const bTokens = mean(per_task.map((t) => t.b_tokens));
  const low = nullIfNaN(interval.low);
  const high = nullIfNaN(interval.high);
  return {
    a: a.id,
    b: b.id,
    paired_tasks: per_task.length,
    per_task,
    mean_diff: nullIfNaN(mean(diffs)),
    ci_low: low,
    ci_high: high,
    method: `paired bootstrap over tasks of (b − a) mean reward, 95 % percentile interval (${interval.resamples} resamples, seed ${seed}); exact two-sided sign test`,
    sign_test: signTest(diffs),
    significant: low !== null && high !== null && (low > 0 || high < 0),
    tokens: {
      a_per_task: nullIfNaN(aTokens),
      b_per_task: nullIfNaN(bTokens),
      change: aTokens > 0 ? (bTokens - aTokens) / aTokens : null,
    },
  };
}
