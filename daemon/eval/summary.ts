// An evaluation's numbers from what its rollouts left in the store: per task the scored attempts'
// rewards, pass@1 and pass@k, tokens and calls per attempt, failures; over the split the mean reward
// with a seeded bootstrap interval, pass rates, tokens and failures by reason.
import type { Rollout } from '../protocol/entities';
import type { EvalTaskResult, EvaluationSummary } from '../protocol/evaluation';
import type { Store } from '../store/store';
import { failureOf } from './failures';
import { bootstrapMean, mean, passAtK } from './stats';

/** One attempt slot (task × attempt index) and the rollouts tried in it (retries after infrastructure failures). */
export interface Slot {
  task: { id: string; index: number; input: unknown };
  attempt: number;
  /** The group of the task's attempts. */
  group: string;
  rollouts: string[];
}

export interface SummaryOptions {
  attempts: number;
  passThreshold: number;
  seed: number;
  wallSeconds: number;
  infrastructureRetries: number;
}

export function taskKey(input: unknown, index: number): string {
  const id = (input as { id?: unknown } | null)?.id;
  return typeof id === 'string' || typeof id === 'number' ? String(id) : `#${index}`;
}

const nullIfNaN = (x: number): number | null => (Number.isNaN(x) ? null : x);

/** The per-task results of the slots (rollouts read back from the store). */
export async function taskResults(
  store: Store,
  slots: Slot[],
  options: Pick<SummaryOptions, 'attempts' | 'passThreshold'>,
): Promise<EvalTaskResult[]> {
  const byTask = new Map<string, Slot[]>();
  for (const slot of slots) byTask.set(slot.task.id, [...(byTask.get(slot.task.id) ?? []), slot]);
  const results: EvalTaskResult[] = [];
  for (const taskSlots of byTask.values()) {
    const task = taskSlots[0]!.task;
    const rewards: number[] = [];
    const scored: string[] = [];
    const failures: EvalTaskResult['failures'] = [];
    let prompt = 0;
    let completion = 0;
    let calls = 0;
    for (const slot of taskSlots.sort((a, b) => a.attempt - b.attempt)) {
      for (const id of slot.rollouts) {
        const rollout = (await store.getRollout(id)) as Rollout;
        const attempts = await store.listAttempts(id);
        const attempt = attempts.at(-1);
        // Attempts the rollout retried itself (an infrastructure failure on its own budget, or a harness
        // failure while max_attempts allowed) say why, but only its last attempt is scored.
        for (const earlier of attempts.slice(0, -1)) failures.push(failureOf(earlier));
        if (rollout.status === 'succeeded' && rollout.reward !== null) {
          rewards.push(rollout.reward);
        } else {
          const failure = attempt ? failureOf(attempt) : { kind: 'harness' as const, reason: 'never ran' };
          failures.push(failure);
          if (failure.kind === 'infrastructure') continue; // retried in a later rollout, or unscored
          rewards.push(0);
        }
        scored.push(id);
        for (const call of await store.listLlmCalls(id)) {
          calls++;
          prompt += call.prompt_ids?.length ?? 0;
          completion += call.response_ids?.length ?? 0;
        }
      }
    }
    const n = rewards.length;
    const passes = rewards.filter((r) => r >= options.passThreshold).length;
    results.push({
      task_id: task.id,
      index: task.index,
      key: taskKey(task.input, task.index),
      rewards,
      passes,
      pass_at_1: passAtK(n, passes, 1),
      pass_at_k: passAtK(n, passes, options.attempts),
      mean_reward: n ? mean(rewards) : null,
      prompt_tokens: n ? prompt / n : 0,
      completion_tokens: n ? completion / n : 0,
      calls: n ? calls / n : 0,
      rollouts: scored,
      failures,
    });
  }
  return results.sort((a, b) => a.index - b.index);
}

/** The split's figures: means over tasks that have a scored attempt. */
export function summarize(tasks: EvalTaskResult[], options: SummaryOptions): EvaluationSummary {
  const scoredTasks = tasks.filter((t) => t.rewards.length > 0);
  const means = scoredTasks.map((t) => t.mean_reward ?? 0);
  const interval = bootstrapMean(means, options.seed);
  const failures: Record<string, number> = {};
  let retries = 0;
  for (const t of tasks)
    for (const f of t.failures) {
      const key = `${f.kind}: ${f.reason}`;
      failures[key] = (failures[key] ?? 0) + 1;
      if (f.kind === 'infrastructure') retries++;
    }
  const over = (f: (t: EvalTaskResult) => number) => nullIfNaN(mean(scoredTasks.map(f)));
  return {
    tasks: tasks.length,
    attempts: options.attempts,
    scored: tasks.reduce((s, t) => s + t.rewards.length, 0),
    unscored_tasks: tasks.length - scoredTasks.length,
    mean_reward: nullIfNaN(mean(means)),
    ci_low: nullIfNaN(interval.low),
    ci_high: nullIfNaN(interval.high),
    ci: `95 % percentile bootstrap over tasks (${interval.resamples} resamples, seed ${interval.seed})`,
    pass_threshold: options.passThreshold,
    pass_at_1: over((t) => t.pass_at_1),
    pass_at_k: over((t) => t.pass_at_k),
    prompt_tokens_per_task: over((t) => t.prompt_tokens),
    completion_tokens_per_task: over((t) => t.completion_tokens),
    policy_tokens_per_task: over((t) => t.prompt_tokens + t.completion_tokens),
    calls_per_task: over((t) => t.calls),
    wall_s: options.wallSeconds,
    failures,
    infrastructure_retries: retries,
  };
}
